// GET /metrics: the registry and its Prometheus text (checked by a parser of the
// exposition format 0.0.4 written here), and the live server's counters and histograms.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "server/metrics.h"
#include "server_harness.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

using namespace std::chrono_literals;
using server::format_metric_value;
using server::MetricsRegistry;
using server::MetricType;

// --- A parser of the text exposition format -----------------------------------------------

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Family {
  std::string type, help;
  std::vector<Sample> samples;
};

struct Exposition {
  std::map<std::string, Family> families;
  // The value of the one sample of `name` whose labels include `labels`; fails the test
  // (returns NaN) when there is not exactly one.
  double value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
};

bool is_name(const std::string& s, bool colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (colon && c == ':') ||
                    (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    if (!ok) return false;
  }
  return true;
}

double parse_value(const std::string& s) {
  if (s == "+Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) throw std::runtime_error("not a value: '" + s + "'");
  return v;
}

// The family a sample name belongs to: itself, or for a histogram its name less
// _bucket / _sum / _count.
std::string family_of(const std::string& sample, const std::map<std::string, Family>& families) {
  if (families.count(sample)) return sample;
  for (const char* suffix : {"_bucket", "_sum", "_count"})
    if (sample.ends_with(suffix)) {
      const std::string base = sample.substr(0, sample.size() - std::string(suffix).size());
      if (families.count(base) && families.at(base).type == "histogram") return base;
    }
  return "";
}

// Parses `text`, failing the test at the first line that is not valid exposition format
// or breaks its rules: HELP and TYPE once per family and before its samples, a family's
// samples together, counters ending in _total, histogram buckets in increasing `le`
// ending at +Inf, cumulative, with _count equal to the +Inf bucket.
void parse_exposition_into(const std::string& text, Exposition& out) {
  EXPECT_TRUE(!text.empty() && text.back() == '\n') << "the text ends with a newline";
  std::set<std::string> finished;  // families whose samples are over
  std::string current;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    ++line_no;
    SCOPED_TRACE("line " + std::to_string(line_no) + ": " + line);
    if (line.empty()) {
      ADD_FAILURE() << "empty line";
      continue;
    }
    if (line[0] == '#') {
      const bool help = line.rfind("# HELP ", 0) == 0, type = line.rfind("# TYPE ", 0) == 0;
      if (!help && !type) continue;  // a comment
      const std::string rest = line.substr(7);
      const size_t space = rest.find(' ');
      const std::string name = rest.substr(0, space);
      const std::string arg = space == std::string::npos ? "" : rest.substr(space + 1);
      EXPECT_TRUE(is_name(name, true)) << name;
      EXPECT_FALSE(finished.count(name)) << "a family's lines are together";
      if (current != name && !current.empty()) finished.insert(current);
      current = name;
      Family& f = out.families[name];
      EXPECT_TRUE(f.samples.empty()) << "HELP and TYPE come before the samples";
      if (help) {
        EXPECT_TRUE(f.help.empty()) << "one HELP";
        f.help = arg.empty() ? " " : arg;
      } else {
        EXPECT_TRUE(f.type.empty()) << "one TYPE";
        EXPECT_TRUE(arg == "counter" || arg == "gauge" || arg == "histogram" || arg == "summary" || arg == "untyped") << arg;
        f.type = arg;
        if (arg == "counter") {
          EXPECT_TRUE(name.ends_with("_total")) << "counters end in _total";
        }
      }
      continue;
    }
    // name{label="value",...} value
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    EXPECT_TRUE(is_name(s.name, true)) << s.name;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        ASSERT_NE(eq, std::string::npos);
        const std::string label = line.substr(i, eq - i);
        EXPECT_TRUE(is_name(label, false)) << label;
        ASSERT_LT(eq + 1, line.size());
        ASSERT_EQ(line[eq + 1], '"');
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ASSERT_LT(j + 1, line.size());
            const char e = line[++j];
            ASSERT_TRUE(e == '\\' || e == '"' || e == 'n') << "escape \\" << e;
            value += e == 'n' ? '\n' : e;
          } else {
            value += line[j];
          }
        }
        ASSERT_LT(j, line.size()) << "unterminated label value";
        EXPECT_TRUE(s.labels.emplace(label, value).second) << "label " << label << " twice";
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ASSERT_LT(i, line.size()) << "unterminated label set";
      ++i;
    }
    ASSERT_LT(i, line.size());
    ASSERT_EQ(line[i], ' ');
    const std::string rest = line.substr(i + 1);
    const std::string value = rest.substr(0, rest.find(' '));  // a timestamp may follow
    EXPECT_NO_THROW(s.value = parse_value(value)) << value;
    const std::string family = family_of(s.name, out.families);
    ASSERT_FALSE(family.empty()) << "a sample of a family without TYPE: " << s.name;
    EXPECT_EQ(family, current) << "samples follow their family's TYPE";
    EXPECT_FALSE(out.families[family].type.empty());
    if (out.families[family].type == "counter") {
      EXPECT_GE(s.value, 0) << "counters do not go below 0";
    }
    out.families[family].samples.push_back(std::move(s));
  }

  for (const auto& [name, f] : out.families) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(f.type.empty());
    EXPECT_FALSE(f.samples.empty());
    if (f.type != "histogram") {
      for (const Sample& s : f.samples) EXPECT_EQ(s.name, name);
      continue;
    }
    // Histograms, per label set (le aside): buckets increase in le and count, end at
    // +Inf, and _count is the +Inf bucket.
    std::map<std::map<std::string, std::string>, std::vector<const Sample*>> series;
    for (const Sample& s : f.samples) {
      auto labels = s.labels;
      labels.erase("le");
      series[labels].push_back(&s);
    }
    for (const auto& [labels, samples] : series) {
      double previous_le = -INFINITY, previous_count = 0;
      std::optional<double> inf, count, sum;
      for (const Sample* s : samples) {
        if (s->name == name + "_bucket") {
          ASSERT_TRUE(s->labels.count("le")) << "a bucket has le";
          const double le = parse_value(s->labels.at("le"));
          EXPECT_GT(le, previous_le) << "buckets in increasing le";
          EXPECT_GE(s->value, previous_count) << "buckets are cumulative";
          EXPECT_FALSE(inf) << "+Inf is the last bucket";
          previous_le = le;
          previous_count = s->value;
          if (std::isinf(le)) inf = s->value;
        } else if (s->name == name + "_count") {
          count = s->value;
        } else if (s->name == name + "_sum") {
          sum = s->value;
        } else {
          ADD_FAILURE() << s->name << " in histogram " << name;
        }
      }
      ASSERT_TRUE(inf.has_value()) << "a +Inf bucket";
      ASSERT_TRUE(count.has_value()) << "a _count";
      EXPECT_TRUE(sum.has_value()) << "a _sum";
      EXPECT_EQ(*count, *inf) << "_count is the +Inf bucket";
    }
  }
}

Exposition parse_exposition(const std::string& text) {
  Exposition out;
  parse_exposition_into(text, out);
  return out;
}

double Exposition::value(const std::string& name, const std::map<std::string, std::string>& labels) const {
  const Sample* found = nullptr;
  size_t n = 0;
  for (const auto& [family, f] : families)
    for (const Sample& s : f.samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) match = match && s.labels.count(k) && s.labels.at(k) == v;
      if (match) {
        found = &s;
        ++n;
      }
    }
  EXPECT_EQ(n, 1u) << name;
  return n == 1 ? found->value : NAN;
}

// --- The registry -------------------------------------------------------------------------

TEST(Metrics, ValuesAreWrittenAsPrometheusReadsThem) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(12345), "12345");
  EXPECT_EQ(format_metric_value(0.001), "0.001");
  EXPECT_EQ(format_metric_value(2.5), "2.5");
  EXPECT_EQ(format_metric_value(0.1 + 0.2), "0.30000000000000004") << "the shortest form that reads back the same";
  EXPECT_EQ(format_metric_value(1e300), "1e+300");
  EXPECT_EQ(format_metric_value(INFINITY), "+Inf");
  EXPECT_EQ(format_metric_value(-INFINITY), "-Inf");
  EXPECT_EQ(format_metric_value(NAN), "NaN");
}

TEST(Metrics, RendersCountersReadingsAndCumulativeHistograms) {
  MetricsRegistry r(server::MetricLabels{{"model_name", "m\"1\\x\n"}});
  server::Counter& ok = r.counter("app:requests_total", "Requests.\nBy reason \\ kind.", {{"reason", "ok"}});
  server::Counter& failed = r.counter("app:requests_total", "Requests.\nBy reason \\ kind.", {{"reason", "failed"}});
  EXPECT_EQ(&r.counter("app:requests_total", "Requests.\nBy reason \\ kind.", {{"reason", "ok"}}), &ok) << "the same series";
  double level = 0.25;
  r.reading("app:level", MetricType::gauge, "A level.", [&] { return level; });
  server::Histogram& h = r.histogram("app:latency_seconds", "Latency.", {0.1, 1, 10});
  ok.add(3);
  failed.add();
  for (double x : {0.05, 0.1, 0.5, 2.0, 100.0}) h.observe(x);
  level = 0.75;

  const std::string text = r.render();
  EXPECT_EQ(text,
            "# HELP app:requests_total Requests.\\nBy reason \\\\ kind.\n"
            "# TYPE app:requests_total counter\n"
            "app:requests_total{model_name=\"m\\\"1\\\\x\\n\",reason=\"ok\"} 3\n"
            "app:requests_total{model_name=\"m\\\"1\\\\x\\n\",reason=\"failed\"} 1\n"
            "# HELP app:level A level.\n"
            "# TYPE app:level gauge\n"
            "app:level{model_name=\"m\\\"1\\\\x\\n\"} 0.75\n"
            "# HELP app:latency_seconds Latency.\n"
            "# TYPE app:latency_seconds histogram\n"
            "app:latency_seconds_bucket{model_name=\"m\\\"1\\\\x\\n\",le=\"0.1\"} 2\n"
            "app:latency_seconds_bucket{model_name=\"m\\\"1\\\\x\\n\",le=\"1\"} 3\n"
            "app:latency_seconds_bucket{model_name=\"m\\\"1\\\\x\\n\",le=\"10\"} 4\n"
            "app:latency_seconds_bucket{model_name=\"m\\\"1\\\\x\\n\",le=\"+Inf\"} 5\n"
            "app:latency_seconds_sum{model_name=\"m\\\"1\\\\x\\n\"} 102.65\n"
            "app:latency_seconds_count{model_name=\"m\\\"1\\\\x\\n\"} 5\n");
  const Exposition e = parse_exposition(text);
  EXPECT_EQ(e.value("app:requests_total", {{"reason", "ok"}}), 3);
  EXPECT_EQ(e.families.at("app:requests_total").help, "Requests.\\nBy reason \\\\ kind.");
  EXPECT_EQ(e.value("app:latency_seconds_bucket", {{"le", "+Inf"}}), 5);
  EXPECT_EQ(e.value("app:requests_total", {{"model_name", "m\"1\\x\n"}, {"reason", "failed"}}), 1) << "label values unescape";
}

TEST(Metrics, TheParserCatchesBrokenExpositions) {
  // The parser is what the live test relies on: it must fail on each of these.
  const std::vector<std::string> broken = {
      "x_total 1\n",                                                                    // no TYPE
      "# TYPE x counter\nx 1\n",                                                        // counter without _total
      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 0\nh_count 1\n",  // not cumulative
      "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0\nh_count 3\n",  // count != +Inf
      "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 0\nh_count 1\n",                        // no +Inf
      "# TYPE g gauge\ng{a=\"1} 2\n",                                                   // unterminated
      "# TYPE g gauge\ng 2x\n",                                                         // not a value
      "# TYPE g gauge\ng 1\n# TYPE f gauge\nf 1\ng 2\n",                                // family split
  };
  for (const std::string& text : broken) {
    SCOPED_TRACE(text);
    testing::TestPartResultArray failures;
    {
      testing::ScopedFakeTestPartResultReporter reporter(testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD,
                                                         &failures);
      parse_exposition(text);
    }
    EXPECT_GT(failures.size(), 0) << "accepted:\n" << text;
  }
}

TEST(Metrics, RefusesWhatPrometheusCouldNotRead) {
  MetricsRegistry r;
  EXPECT_NE(thrown_error([&] { r.counter("requests", "x"); }).find("_total"), std::string::npos);
  EXPECT_NE(thrown_error([&] { r.counter("bad name_total", "x"); }).find("not a Prometheus metric name"), std::string::npos);
  EXPECT_NE(thrown_error([&] { r.counter("a_total", "x", {{"le", "1"}}); }).find("le"), std::string::npos);
  EXPECT_NE(thrown_error([&] { r.histogram("h", "x", {1, 1}); }).find("must increase"), std::string::npos);
  EXPECT_NE(thrown_error([&] { r.histogram("h", "x", {1, INFINITY}); }).find("not finite"), std::string::npos);
  r.counter("c_total", "help");
  EXPECT_NE(thrown_error([&] { r.reading("c_total", MetricType::gauge, "help", [] { return 0.0; }); }).find("already a counter"),
            std::string::npos);
  EXPECT_NE(thrown_error([&] { r.counter("c_total", "other help", {{"x", "1"}}); }).find("another help"), std::string::npos);
}

TEST(Metrics, CountersAndHistogramsTakeConcurrentUpdates) {
  MetricsRegistry r;
  server::Counter& c = r.counter("c_total", "c");
  server::Histogram& h = r.histogram("h", "h", {0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.add();
        h.observe(i % 2 ? 1.0 : 0.0);
        if (i % 1000 == 0) r.render();
      }
    });
  for (auto& t : threads) t.join();
  const Exposition e = parse_exposition(r.render());
  EXPECT_EQ(e.value("c_total"), 40000);
  EXPECT_EQ(e.value("h_bucket", {{"le", "0.5"}}), 20000);
  EXPECT_EQ(e.value("h_count"), 40000);
  EXPECT_EQ(e.value("h_sum"), 20000);
}

// --- The server ---------------------------------------------------------------------------

Exposition scrape(const TestServer& s) {
  const HttpReply r = get(s, "/metrics");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  return parse_exposition(r.body);
}

TEST(ServerMetrics, TheLiveExpositionParsesAndMovesWithRequests) {
  TestServer s(demo_model_dir(), {.model_name = "test-model"});
  const Exposition before = scrape(s);
  for (const char* name : {"glass:num_requests_running", "glass:num_requests_waiting", "glass:kv_cache_usage_perc",
                           "glass:prefix_cache_queries_total", "glass:prefix_cache_hits_total", "glass:prompt_tokens_total",
                           "glass:generation_tokens_total", "glass:request_success_total", "glass:time_to_first_token_seconds",
                           "glass:inter_token_latency_seconds", "glass:e2e_request_latency_seconds"}) {
    ASSERT_TRUE(before.families.count(name)) << name;
    for (const Sample& sample : before.families.at(name).samples) EXPECT_EQ(sample.labels.at("model_name"), "test-model");
  }
  EXPECT_EQ(before.families.at("glass:kv_cache_usage_perc").type, "gauge");
  EXPECT_EQ(before.families.at("glass:time_to_first_token_seconds").type, "histogram");
  EXPECT_EQ(before.value("glass:prompt_tokens_total"), 0);
  EXPECT_EQ(before.value("glass:request_success_total", {{"finished_reason", "length"}}), 0);
  EXPECT_EQ(before.value("glass:kv_cache_usage_perc"), 0);
  EXPECT_EQ(before.value("glass:time_to_first_token_seconds_count"), 0);

  // Two whole requests and a stream, each cut by max_tokens (length).
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (const std::string& body : {chat_body("Hello", R"("max_tokens": 5, "ignore_eos": true)"),
                                  std::string(R"({"prompt": "Once upon", "max_tokens": 3, "ignore_eos": true})")}) {
    const std::string path = body.find("messages") != std::string::npos ? "/v1/chat/completions" : "/v1/completions";
    const OJson j = post_json(s, path, body).json();
    prompt_tokens += j["usage"]["prompt_tokens"].get<int64_t>();
    completion_tokens += j["usage"]["completion_tokens"].get<int64_t>();
  }
  const HttpReply streamed = post_json(
      s, "/v1/completions", R"({"prompt": "Hi", "max_tokens": 4, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})");
  const auto data = sse_data(streamed.body);
  ASSERT_GE(data.size(), 2u);
  const OJson usage = OJson::parse(data[data.size() - 2])["usage"];
  prompt_tokens += usage["prompt_tokens"].get<int64_t>();
  completion_tokens += usage["completion_tokens"].get<int64_t>();
  EXPECT_EQ(completion_tokens, 5 + 3 + 4);

  // Counted before the last bytes of each response were written.
  const Exposition after = scrape(s);
  EXPECT_EQ(after.value("glass:prompt_tokens_total"), prompt_tokens);
  EXPECT_EQ(after.value("glass:generation_tokens_total"), completion_tokens);
  EXPECT_EQ(after.value("glass:request_success_total", {{"finished_reason", "length"}}), 3);
  EXPECT_EQ(after.value("glass:request_success_total", {{"finished_reason", "stop"}}), 0);
  EXPECT_EQ(after.value("glass:time_to_first_token_seconds_count"), 3) << "one first token per request";
  EXPECT_EQ(after.value("glass:inter_token_latency_seconds_count"), completion_tokens - 3) << "one gap per later token";
  EXPECT_EQ(after.value("glass:e2e_request_latency_seconds_count"), 3);
  const double ttft = after.value("glass:time_to_first_token_seconds_sum");
  const double itl = after.value("glass:inter_token_latency_seconds_sum");
  const double e2e = after.value("glass:e2e_request_latency_seconds_sum");
  EXPECT_GT(ttft, 0);
  EXPECT_GT(itl, 0);
  EXPECT_LE(ttft + itl, e2e) << "first token and the gaps after it lie within each request's span";
  EXPECT_EQ(after.value("glass:num_requests_running"), 0);
  EXPECT_EQ(after.value("glass:num_requests_waiting"), 0);
  EXPECT_EQ(after.value("glass:kv_cache_usage_perc"), 0) << "finished requests free their blocks";
  // Every admitted prompt is looked up in the prefix cache; the chat prompt's first full
  // block stays cached after its request.
  EXPECT_EQ(after.value("glass:prefix_cache_queries_total"), prompt_tokens);
  EXPECT_LE(after.value("glass:prefix_cache_hits_total"), prompt_tokens);
  EXPECT_GE(after.value("glass:kv_cache_cached_blocks"), 1);
  EXPECT_EQ(after.value("glass:kv_cache_evicted_blocks_total"), 0);
}

TEST(ServerMetrics, GaugesShowARunningRequestAndAbortsAreCounted) {
  TestServer s(demo_model_dir(), {.parallel = 1, .queue = 4, .context = 4096});
  RawConnection running(s.port());
  running.post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 4000, "ignore_eos": true, "stream": true})");
  wait_for([&] { return s.stats().running == 1 && s.stats().forward_passes >= 3; });
  RawConnection waiting(s.port());
  waiting.post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})");
  wait_for([&] { return s.stats().waiting == 1; });
  const Exposition during = scrape(s);
  EXPECT_EQ(during.value("glass:num_requests_running"), 1);
  EXPECT_EQ(during.value("glass:num_requests_waiting"), 1);
  const server::SchedulerStats st = s.stats();
  EXPECT_GT(during.value("glass:kv_cache_usage_perc"), 0);
  EXPECT_LE(during.value("glass:kv_cache_usage_perc"),
            static_cast<double>(st.kv_blocks_total - st.kv_blocks_free) / static_cast<double>(st.kv_blocks_total) + 1e-9);
  EXPECT_GT(during.value("glass:generation_tokens_total"), 0) << "tokens count as they stream, before the end";

  running.close();  // the stream's client leaves: an abort, and the waiting one runs
  Exposition after = scrape(s);
  wait_for([&] {
    after = scrape(s);
    return after.value("glass:request_success_total", {{"finished_reason", "abort"}}) == 1 &&
           after.value("glass:request_success_total", {{"finished_reason", "length"}}) == 1;
  });
  EXPECT_EQ(after.value("glass:request_success_total", {{"finished_reason", "abort"}}), 1);
  EXPECT_EQ(after.value("glass:request_success_total", {{"finished_reason", "length"}}), 1);
  EXPECT_EQ(after.value("glass:e2e_request_latency_seconds_count"), 1) << "an aborted request has no end-to-end latency";
}

}  // namespace
}  // namespace glass::test
