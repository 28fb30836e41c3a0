#include "server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/error.h"

namespace glass::server {

namespace {

bool is_metric_name(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool is_label_name(const std::string& name) { return is_metric_name(name) && name.find(':') == std::string::npos; }

// Label values escape backslash, double quote and newline; help text backslash and newline.
std::string escape(const std::string& s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote) out += "\\\"";
    else out += c;
  }
  return out;
}

// `{a="1",b="2"}` of the constant labels, then `labels`, then `extra` (le); "" for none.
std::string label_set(const MetricLabels& constant, const MetricLabels& labels, const MetricLabels& extra = {}) {
  std::string out;
  for (const MetricLabels* list : {&constant, &labels, &extra})
    for (const auto& [name, value] : *list) out += str_cat(out.empty() ? "{" : ",", name, "=\"", escape(value, true), "\"");
  return out.empty() ? out : out + "}";
}

const char* type_name(MetricType type) {
  switch (type) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::histogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return std::to_string(static_cast<int64_t>(value));
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, r.ptr);
}

// --- Histogram ----------------------------------------------------------------------------

Histogram::Histogram(std::vector<double> upper_bounds) : upper_bounds_(std::move(upper_bounds)) {
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    if (!std::isfinite(upper_bounds_[i])) fail("histogram bucket ", i, " is not finite (+Inf is implied)");
    if (i > 0 && !(upper_bounds_[i] > upper_bounds_[i - 1]))
      fail("histogram buckets must increase: ", upper_bounds_[i - 1], " then ", upper_bounds_[i]);
  }
  counts_.assign(upper_bounds_.size() + 1, 0);
}

void Histogram::observe(double value) {
  // The first bucket whose bound is >= value (Prometheus buckets are "less or equal").
  const size_t bucket = static_cast<size_t>(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin());
  std::lock_guard lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = upper_bounds_;
  std::lock_guard lock(mutex_);
  s.sum = sum_;
  uint64_t running = 0;
  for (uint64_t c : counts_) s.cumulative.push_back(running += c);
  return s;
}

// --- MetricsRegistry ----------------------------------------------------------------------

MetricsRegistry::MetricsRegistry(MetricLabels constant_labels) : constant_labels_(std::move(constant_labels)) {
  for (const auto& [name, value] : constant_labels_)
    if (!is_label_name(name)) fail("metric label name '", name, "' is not a Prometheus label name");
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, MetricType type, const std::string& help) {
  if (!is_metric_name(name)) fail("'", name, "' is not a Prometheus metric name");
  if (type == MetricType::counter && !name.ends_with("_total")) fail("counter '", name, "' must end in _total");
  for (Family& f : families_)
    if (f.name == name) {
      if (f.type != type) fail("metric '", name, "' is already a ", type_name(f.type));
      if (f.help != help) fail("metric '", name, "' is already registered with another help text");
      return f;
    }
  families_.push_back({name, help, type, {}});
  return families_.back();
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help, MetricLabels labels) {
  for (const auto& [label, value] : labels)
    if (!is_label_name(label) || label == "le") fail("'", label, "' is not a label name a counter may have");
  std::lock_guard lock(mutex_);
  Family& f = family(name, MetricType::counter, help);
  for (Series& s : f.series)
    if (s.labels == labels) {
      if (!s.counter) fail("metric '", name, "' already has a reading with these labels");
      return *s.counter;
    }
  f.series.push_back({std::move(labels), std::make_unique<Counter>(), nullptr, nullptr});
  return *f.series.back().counter;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds) {
  auto h = std::make_unique<Histogram>(std::move(upper_bounds));
  std::lock_guard lock(mutex_);
  Family& f = family(name, MetricType::histogram, help);
  if (!f.series.empty()) fail("histogram '", name, "' is already registered");
  f.series.push_back({{}, nullptr, std::move(h), nullptr});
  return *f.series.back().histogram;
}

void MetricsRegistry::reading(const std::string& name, MetricType type, const std::string& help, std::function<double()> read) {
  if (type == MetricType::histogram) fail("metric '", name, "': a reading is a counter or a gauge");
  std::lock_guard lock(mutex_);
  Family& f = family(name, type, help);
  if (!f.series.empty()) fail("metric '", name, "' is already registered");
  f.series.push_back({{}, nullptr, nullptr, std::move(read)});
}

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard lock(mutex_);
  for (const Family& f : families_) {
    out += str_cat("# HELP ", f.name, " ", escape(f.help, false), "\n# TYPE ", f.name, " ", type_name(f.type), "\n");
    for (const Series& s : f.series) {
      if (s.counter) {
        out += str_cat(f.name, label_set(constant_labels_, s.labels), " ", s.counter->value(), "\n");
      } else if (s.read) {
        out += str_cat(f.name, label_set(constant_labels_, s.labels), " ", format_metric_value(s.read()), "\n");
      } else {
        const Histogram::Snapshot h = s.histogram->snapshot();
        for (size_t i = 0; i < h.cumulative.size(); ++i) {
          const std::string le = i < h.upper_bounds.size() ? format_metric_value(h.upper_bounds[i]) : "+Inf";
          out += str_cat(f.name, "_bucket", label_set(constant_labels_, s.labels, {{"le", le}}), " ", h.cumulative[i], "\n");
        }
        out += str_cat(f.name, "_sum", label_set(constant_labels_, s.labels), " ", format_metric_value(h.sum), "\n");
        out += str_cat(f.name, "_count", label_set(constant_labels_, s.labels), " ", h.cumulative.back(), "\n");
      }
    }
  }
  return out;
}

}  // namespace glass::server
