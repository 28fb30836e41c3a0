#include "server/serving_metrics.h"

namespace glass::server {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

std::optional<double> RequestClock::first_token_seconds() const {
  if (!first_token) return std::nullopt;
  return seconds_between(arrival, *first_token);
}

ServingMetrics::ServingMetrics(const std::string& model_name, std::function<SchedulerStats()> stats)
    : stats_(std::move(stats)), registry_({{"model_name", model_name}}) {
  // What the scheduler counts, read at each scrape: one line per metric.
  const auto from_stats = [this](double (*field)(const SchedulerStats&)) { return [this, field] { return field(stats_()); }; };
  registry_.reading("glass:num_requests_running", MetricType::gauge, "Number of requests in model execution batches.",
                    from_stats([](const SchedulerStats& s) { return static_cast<double>(s.running); }));
  registry_.reading("glass:num_requests_waiting", MetricType::gauge, "Number of requests waiting to be processed.",
                    from_stats([](const SchedulerStats& s) { return static_cast<double>(s.waiting); }));
  registry_.reading("glass:kv_cache_usage_perc", MetricType::gauge, "KV-cache usage. 1 means 100 percent usage.",
                    from_stats([](const SchedulerStats& s) {
                      return s.kv_blocks_total > 0
                                 ? static_cast<double>(s.kv_blocks_total - s.kv_blocks_free) / static_cast<double>(s.kv_blocks_total)
                                 : 0.0;
                    }));
  registry_.reading("glass:kv_cache_cached_blocks", MetricType::gauge,
                    "KV blocks no request holds, kept for the prompt prefixes they hold (evictable).",
                    from_stats([](const SchedulerStats& s) { return static_cast<double>(s.kv_blocks_cached); }));
  registry_.reading("glass:kv_cache_evicted_blocks_total", MetricType::counter,
                    "Cached KV blocks evicted to make room.",
                    from_stats([](const SchedulerStats& s) { return static_cast<double>(s.kv_blocks_evicted); }));
  registry_.reading("glass:prefix_cache_queries_total", MetricType::counter,
                    "Prefix cache queries, in terms of number of queried tokens.",
                    from_stats([](const SchedulerStats& s) { return static_cast<double>(s.prefix_cache_queries); }));
  registry_.reading("glass:prefix_cache_hits_total", MetricType::counter, "Prefix cache hits, in terms of number of cached tokens.",
                    from_stats([](const SchedulerStats& s) { return static_cast<double>(s.prefix_cache_hits); }));

  // What the handlers see.
  prompt_tokens_ = &registry_.counter("glass:prompt_tokens_total", "Number of prefill tokens processed.");
  generation_tokens_ = &registry_.counter("glass:generation_tokens_total", "Number of generation tokens processed.");
  constexpr const char* kSuccessHelp = "Count of successfully processed requests.";
  finished_stop_ = &registry_.counter("glass:request_success_total", kSuccessHelp, {{"finished_reason", "stop"}});
  finished_length_ = &registry_.counter("glass:request_success_total", kSuccessHelp, {{"finished_reason", "length"}});
  finished_abort_ = &registry_.counter("glass:request_success_total", kSuccessHelp, {{"finished_reason", "abort"}});
  // vLLM's buckets.
  time_to_first_token_ = &registry_.histogram(
      "glass:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
      {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0,
       2560.0});
  inter_token_latency_ = &registry_.histogram(
      "glass:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
      {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0});
  e2e_request_latency_ = &registry_.histogram(
      "glass:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
      {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0,
       7680.0});
}

void ServingMetrics::tokens_arrived(RequestClock& clock, std::span<const StreamedToken> tokens, size_t prompt_tokens) {
  for (const StreamedToken& t : tokens) {
    if (!clock.first_token) {
      clock.first_token = t.emitted_at;
      time_to_first_token_->observe(seconds_between(clock.arrival, t.emitted_at));
      prompt_tokens_->add(static_cast<int64_t>(prompt_tokens));
    } else {
      inter_token_latency_->observe(seconds_between(*clock.last_token, t.emitted_at));
    }
    clock.last_token = t.emitted_at;
  }
  generation_tokens_->add(static_cast<int64_t>(tokens.size()));
}

void ServingMetrics::finished(const RequestClock& clock, const FinishReason& reason) {
  (reason.openai_name() == "length" ? finished_length_ : finished_stop_)->add();
  e2e_request_latency_->observe(seconds_between(clock.arrival, Clock::now()));
}

void ServingMetrics::aborted() { finished_abort_->add(); }

}  // namespace glass::server
