// glass serve's metrics (GET /metrics), named as vLLM's with a glass: prefix, so that
// dashboards made for vLLM read them, each with the label model_name:
//   glass:num_requests_running, glass:num_requests_waiting   gauges, from the scheduler
//   glass:kv_cache_usage_perc          gauge, 0..1: KV blocks a request holds / all
//   glass:kv_cache_cached_blocks       gauge: blocks no request holds, kept for prefixes
//   glass:kv_cache_evicted_blocks_total  counter: cached blocks evicted to make room
//   glass:prefix_cache_queries_total   counters, prompt tokens looked up in / found in
//   glass:prefix_cache_hits_total        the prefix cache (vLLM v1's, in tokens)
//   glass:prompt_tokens_total          prompt tokens of requests that got a first token
//   glass:generation_tokens_total      tokens generated (every one a client was sent,
//                                      or would have been)
//   glass:request_success_total{finished_reason="stop|length|abort"}
//                                      requests that finished; abort: the client left
//   glass:time_to_first_token_seconds  histogram: a request's arrival (its handler
//                                      start) to its first token leaving the scheduler
//   glass:inter_token_latency_seconds  histogram: between consecutive tokens of a request,
//                                      as the scheduler handed them over
//   glass:e2e_request_latency_seconds  histogram: arrival to finish
// Buckets are vLLM's.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "server/metrics.h"
#include "server/scheduler.h"

namespace glass::server {

// One request's times, kept by its handler and read by the metrics and the log.
struct RequestClock {
  std::chrono::steady_clock::time_point arrival;
  std::optional<std::chrono::steady_clock::time_point> first_token, last_token;
  std::optional<double> first_token_seconds() const;
};

class ServingMetrics {
 public:
  // `stats` is read at each render (the gauges and the prefix cache counters).
  ServingMetrics(const std::string& model_name, std::function<SchedulerStats()> stats);

  // Tokens of one request as they arrive from its stream, in order: the first sets the
  // time to first token and counts the prompt's tokens, each later one an inter-token
  // latency; all count as generated.
  void tokens_arrived(RequestClock& clock, std::span<const StreamedToken> tokens, size_t prompt_tokens);
  // The request finished (stop or length): counted by reason, end-to-end latency to now.
  void finished(const RequestClock& clock, const FinishReason& reason);
  // Its client left before the end.
  void aborted();

  std::string render() const { return registry_.render(); }

 private:
  std::function<SchedulerStats()> stats_;
  MetricsRegistry registry_;
  // Registered in the constructor, in the order /metrics lists them.
  Counter* prompt_tokens_ = nullptr;
  Counter* generation_tokens_ = nullptr;
  Counter* finished_stop_ = nullptr;
  Counter* finished_length_ = nullptr;
  Counter* finished_abort_ = nullptr;
  Histogram* time_to_first_token_ = nullptr;
  Histogram* inter_token_latency_ = nullptr;
  Histogram* e2e_request_latency_ = nullptr;
};

}  // namespace glass::server
