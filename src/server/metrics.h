// Metrics in the Prometheus text exposition format (version 0.0.4), for GET /metrics: a
// thread-safe registry of counters, histograms and readings (values taken when rendered,
// e.g. from the scheduler's statistics), and the renderer.
//
//   # HELP glass:prompt_tokens_total Number of prefill tokens processed.
//   # TYPE glass:prompt_tokens_total counter
//   glass:prompt_tokens_total{model_name="Qwen2.5-0.5B-Instruct"} 1234
//
// Every sample carries the registry's constant labels (model_name, as vLLM's do).
// Histograms write cumulative `_bucket{le="..."}` lines ending with le="+Inf", then
// `_sum` and `_count`. Families are written in the order they were registered.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace glass::server {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { counter, gauge, histogram };

class Counter {
 public:
  void add(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

class Histogram {
 public:
  // `upper_bounds`: finite, strictly increasing; the +Inf bucket is implied. Throws
  // glass::Error otherwise.
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;  // without +Inf
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf (= count)
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> upper_bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
};

class MetricsRegistry {
 public:
  explicit MetricsRegistry(MetricLabels constant_labels = {});

  // Names are Prometheus metric names ([a-zA-Z_:][a-zA-Z0-9_:]*; a counter's ends in
  // _total), label names [a-zA-Z_][a-zA-Z0-9_]*; glass::Error otherwise, or when a name
  // is registered again as another type. A counter name registered again with other
  // labels is another series of the same family (its help must be the same).
  Counter& counter(const std::string& name, const std::string& help, MetricLabels labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds);
  // A gauge or counter whose value lives elsewhere: `read` is called at each render.
  void reading(const std::string& name, MetricType type, const std::string& help, std::function<double()> read);

  // The exposition text, every family; ends with a newline.
  std::string render() const;
  // Content-Type of what render() returns.
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  struct Series {
    MetricLabels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> read;
  };
  struct Family {
    std::string name, help;
    MetricType type;
    std::deque<Series> series;
  };
  Family& family(const std::string& name, MetricType type, const std::string& help);

  const MetricLabels constant_labels_;
  mutable std::mutex mutex_;  // guards the families' lists; values have their own
  std::deque<Family> families_;
};

// A sample value as Prometheus writes it: integers without a fraction, others in the
// shortest form that reads back the same, "+Inf", "-Inf", "NaN".
std::string format_metric_value(double value);

}  // namespace glass::server
