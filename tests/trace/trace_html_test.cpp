// The HTML page: self-contained, escaped, and it renders in headless Chromium without
// console errors into a screenshot that is not blank.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "base/json_fields.h"
#include "support/test_support.h"
#include "trace/trace_report.h"

namespace glass {
namespace {

using test::run_command;
using test::shell_quote;

LensToken token(int32_t id, double prob, std::string text) {
  LensToken t;
  t.id = id;
  t.prob = prob;
  t.logit = static_cast<float>(std::log(prob));
  t.text = std::move(text);
  return t;
}

StageRecord stage(const std::string& name, int layer, double rms) {
  StageRecord r;
  r.stage = name;
  r.layer = layer;
  r.axes = {{"pos", 3}, {"hidden", 4}};
  r.positions = {0, 1, 2};
  r.tokens = {10, 11, 12};
  for (int p = 0; p < 3; ++p) {
    TensorStats s;
    for (int i = 0; i < 4; ++i) s.add(static_cast<float>(rms * (i % 2 ? 1 : -1)));
    r.per_position.push_back(s);
    r.overall.merge(s);
    r.first.push_back({static_cast<float>(rms), -static_cast<float>(rms)});
  }
  return r;
}

// Three tokens, two layers, and text that must be escaped.
TraceReport sample_report() {
  TraceReport r;
  r.model_dir = "/models/<tiny>";
  r.backend = "reference (scalar, 1 thread)";
  r.config.num_layers = 2;
  r.config.hidden_size = 4;
  r.config.num_heads = 2;
  r.config.num_kv_heads = 1;
  r.config.head_dim = 2;
  r.config.vocab_size = 100;
  r.prompt_text = "Hi <script>alert(1)</script>\n";
  r.ids = {10, 11, 12};
  r.token_texts = {"Hi", " <script>alert(1)</script>", "\n"};
  r.positions = {0, 1, 2};
  r.layers = {0, 1};
  r.stages = {stage("embed", -1, 0.1), stage("o_proj", 0, 0.5), stage("down", 0, 0.4), stage("output", 0, 1.0),
              stage("o_proj", 1, 0.6), stage("down", 1, 0.7),   stage("output", 1, 1.5), stage("final_norm", -1, 1.0)};
  LogitLens l;
  l.top_k = 3;
  l.positions = {0, 1, 2};
  l.tokens = {10, 11, 12};
  for (int layer = 0; layer < 2; ++layer) {
    LensLayer ll;
    ll.layer = layer;
    for (int p = 0; p < 3; ++p)
      ll.top.push_back({token(20 + p, 0.2 + 0.3 * layer, "</script><b>x"), token(30, 0.1, " y"), token(31, 0.05, "")});
    l.layers.push_back(ll);
  }
  l.final_top = l.layers.back().top;
  l.last_layer_max_abs_diff = 0.0;
  r.lens = l;
  return r;
}

// How many times `needle` occurs in `text`, overlapping ones included.
size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; ++at) ++n;
  return n;
}

TEST(TraceHtml, SelfContainedAndEscaped) {
  const std::string html = trace_report_html(sample_report());
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  for (const char* external : {"<link", " src=", "https://", "url(", "@import", "fetch(", "XMLHttpRequest"})
    EXPECT_EQ(html.find(external), std::string::npos) << "the page must not load anything: found " << external;
  // The only URL is the SVG namespace, which is a name, not a fetch.
  size_t at = 0;
  while ((at = html.find("http://", at)) != std::string::npos) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << html.substr(at, 40);
    ++at;
  }
  EXPECT_EQ(html.find("<script>alert"), std::string::npos) << "token text is escaped";
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("␣"), std::string::npos) << "leading spaces are visible";
  EXPECT_NE(html.find("&lt;tiny&gt;"), std::string::npos);
  // CJK fonts after the Latin ones in the text and the monospace stacks.
  EXPECT_NE(html.find("\"Segoe UI\", \"Noto Sans CJK SC\", \"WenQuanYi Micro Hei\", sans-serif"), std::string::npos);
  EXPECT_NE(html.find("Menlo, \"Noto Sans Mono CJK SC\",\n"), std::string::npos);
  EXPECT_NE(html.find("\"WenQuanYi Micro Hei Mono\", monospace"), std::string::npos);

  // Exactly the page's own two scripts, plus the data block, whose JSON survives "</script>" in tokens.
  const size_t scripts = occurrences(html, "<script");
  EXPECT_EQ(scripts, 3u);
  const std::string open = "<script type=\"application/json\" id=\"glass-lens-data\">";
  const size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = html.find("</script>", begin);
  const Json data = parse_json(html.substr(begin + open.size(), end - begin - open.size()), "lens data");
  ASSERT_EQ(data["rows"].size(), 3u) << "two layers and the logits";
  EXPECT_EQ(data["rows"][0]["top"][2][0]["text"], "</script><b>x");
  EXPECT_TRUE(data["rows"][2]["final"].get<bool>());

  // The grid, the rms curves (one path per traced series) and the final bars.
  EXPECT_NE(html.find("<table class=\"lens\">"), std::string::npos);
  const size_t cells = occurrences(html, "<td class=\"cell");
  EXPECT_EQ(cells, 9u);
  const size_t paths = occurrences(html, "<path d=");
  EXPECT_EQ(paths, 3u) << "output, o_proj and down were traced";
  // The rms axis (0 to 1.5, and a margin) is marked at round numbers.
  std::vector<std::string> ticks;
  for (at = 0; (at = html.find("<text class=\"tick\"", at)) != std::string::npos; ++at) {
    const size_t from = html.find('>', at) + 1;
    ticks.push_back(html.substr(from, html.find('<', from) - from));
  }
  EXPECT_EQ(ticks, (std::vector<std::string>{"0", "0.5", "1", "1.5"}));
  EXPECT_NE(html.find("width:50.00%"), std::string::npos) << "a bar is as long as its probability";

  // The model's prediction at the last position is shown once: in the details panel, which
  // opens on it with its cell marked, not again in a section of its own.
  const size_t bar_rows = occurrences(html, "<div class=\"bar-row\">");
  EXPECT_EQ(bar_rows, 3u) << "one set of top-3 bars";
  EXPECT_NE(html.find("<b id=\"detail-title\">Next token at position 2 (input ↵)</b>"), std::string::npos);
  EXPECT_EQ(html.find("Next token: top"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"cell sel\" data-l=\"2\" data-p=\"2\""), std::string::npos);
  const size_t selected = occurrences(html, " sel\"");
  EXPECT_EQ(selected, 1u);

  EXPECT_NE(html.find("reproduces the model's logits exactly"), std::string::npos);
  EXPECT_EQ(html.find("logits to 0"), std::string::npos);
}

TEST(TraceHtml, SaysHowCloseTheLensIsToTheLogits) {
  TraceReport r = sample_report();
  r.lens->last_layer_max_abs_diff = 3.14159e-6;
  const std::string html = trace_report_html(r);
  EXPECT_NE(html.find("matches the model's logits to within 3.1e-06 (max |difference|)"), std::string::npos);
  EXPECT_EQ(html.find("exactly"), std::string::npos);
}

TEST(TraceHtml, ShowsTheExpertsEachTokenChose) {
  TraceReport r = sample_report();
  ExpertRouting routing;
  routing.experts = 4;
  routing.positions = {0, 1, 2};
  for (int layer = 0; layer < 2; ++layer) {
    ExpertRoutingLayer l;
    l.layer = layer;
    for (int p = 0; p < 3; ++p) l.chosen.push_back({{p + layer, 0.75f}, {(p + layer + 2) % 4, 0.25f}});
    routing.layers.push_back(l);
  }
  r.routing = routing;
  const std::string html = trace_report_html(r);
  EXPECT_NE(html.find("<h2>Experts chosen</h2>"), std::string::npos);
  EXPECT_NE(html.find("<table class=\"lens experts\">"), std::string::npos);
  EXPECT_NE(html.find(">e2 75%</span>"), std::string::npos);
  EXPECT_NE(html.find("expert 3  weight 0.250"), std::string::npos);
  EXPECT_EQ(trace_report_html(sample_report()).find("Experts chosen"), std::string::npos) << "dense models have none";
  const auto j = trace_report_json(r);
  EXPECT_EQ(j["routing"]["layers"][1]["experts"][2].dump(), "[3,1]");
  EXPECT_EQ(j["routing"]["layers"][1]["weights"][2].dump(), "[0.75,0.25]");
}

TEST(TraceHtml, WithoutLensOrLayerStagesStillAPage) {
  TraceReport r = sample_report();
  r.lens.reset();
  r.stages = {stage("embed", -1, 0.1)};
  const std::string html = trace_report_html(r);
  EXPECT_NE(html.find("No per-layer stages were traced"), std::string::npos);
  EXPECT_EQ(html.find("<table class=\"lens\">"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

std::string chromium_binary() {
  if (const char* env = std::getenv("GLASS_CHROMIUM"); env != nullptr && *env != '\0') return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    struct stat st {};
    if (::stat(p, &st) == 0) return p;
  }
  return "";
}

// The flags every headless run here uses: no sandbox (containers), no GPU, no network.
const std::string kChromiumFlags =
    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
    " --disable-component-update --disable-sync --enable-logging=stderr --v=0";

std::string html_unescaped(std::string s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool replaced = false;
    for (const auto& [entity, ch] : {std::pair{"&quot;", '"'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}}) {
      if (s.compare(i, std::strlen(entity), entity) == 0) {
        out += ch;
        i += std::strlen(entity) - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += s[i];
  }
  return out;
}

std::string python3() {
  struct stat st {};
  return ::stat("/usr/bin/python3", &st) == 0 ? "/usr/bin/python3" : "python3";
}

// The real thing: glass trace --html on the demo model, opened in headless Chromium.
TEST(TraceHtml, RendersInHeadlessChromium) {
  const std::string chromium = chromium_binary();
  if (chromium.empty())
    GTEST_SKIP() << "Chromium is not installed (Debian package `chromium`; scripts/install-deps.sh --test installs it)";
  test::TempDir tmp;
  const std::string page = tmp.file("trace.html");
  auto r = test::run_glass("trace -p " + shell_quote("The quick brown fox jumps over the lazy dog") + " --html " +
                           shell_quote(page) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::string flags = kChromiumFlags + " --window-size=1000,800";
  const std::string url = shell_quote("file://" + page);
  r = run_command("timeout 120 " + shell_quote(chromium) + flags + " --user-data-dir=" +
                  shell_quote(tmp.file("profile-a")) + " --screenshot=" + shell_quote(tmp.file("shot.png")) + " " + url);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Every console message (errors included) is logged as CONSOLE; the page logs nothing.
  EXPECT_EQ(r.err.find("CONSOLE"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Uncaught"), std::string::npos) << r.err;

  r = run_command("timeout 120 " + shell_quote(chromium) + flags + " --user-data-dir=" +
                  shell_quote(tmp.file("profile-b")) + " --dump-dom " + url);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("data-glass-ready=\"yes\""), std::string::npos) << "the page's script ran to the end";
  EXPECT_EQ(r.out.find("data-glass-error=\""), std::string::npos) << "a script error was caught on the page";
  EXPECT_EQ(r.err.find("CONSOLE"), std::string::npos) << r.err;

  r = run_command(python3() + " " + shell_quote(GLASS_PNG_STATS) + " " + shell_quote(tmp.file("shot.png")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json stats = parse_json(r.out, "png_stats.py");
  EXPECT_EQ(stats["width"], 1000);
  EXPECT_EQ(stats["height"], 800);
  EXPECT_GT(stats["non_background"].get<double>(), 0.05) << "the screenshot is mostly blank: " << r.out;
  EXPECT_GT(stats["colours"].get<int>(), 50) << "the screenshot has almost no colours: " << r.out;
}

// Chinese and Korean tokens are drawn with real glyphs, not missing-glyph boxes: the page
// names CJK fonts and scripts/install-deps.sh installs one (fonts-wqy-microhei).
// glyph_probe.js draws each such character in the font stacks the page gives it and
// compares it with a character no font has; see there.
TEST(TraceHtml, CjkTokensHaveGlyphs) {
  const std::string chromium = chromium_binary();
  if (chromium.empty())
    GTEST_SKIP() << "Chromium is not installed (Debian package `chromium`; scripts/install-deps.sh --test installs it)";
  test::TempDir tmp;
  const std::string page = tmp.file("trace.html");
  auto r = test::run_glass("trace -p " + shell_quote("안녕하세요 世界, 你好") + " --html " + shell_quote(page) +
                           " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json trace = parse_json(r.out, "glass trace --format json");
  EXPECT_EQ(trace["prompt"]["tokens"][0], "안") << "whole characters in the tokens";
  EXPECT_EQ(trace["prompt"]["tokens"][4], "世界");
  std::string html = test::read_string(page);
  const size_t end = html.rfind("</body>");
  ASSERT_NE(end, std::string::npos);
  html.insert(end, "<script>" + test::read_string(GLASS_GLYPH_PROBE) + "</script>");
  const std::string probe = tmp.file("probe.html");
  test::write_string(probe, html);

  // Returns the probe's result with the fonts fontconfig finds under `env` (a prefix).
  const auto probe_glyphs = [&](const std::string& env, const std::string& profile) {
    const auto run = run_command(env + "timeout 120 " + shell_quote(chromium) + kChromiumFlags + " --user-data-dir=" +
                                 shell_quote(tmp.file(profile)) + " --dump-dom " + shell_quote("file://" + probe));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const std::string open = "data-cjk=\"";
    const size_t at = run.out.find(open);
    if (at == std::string::npos) {
      ADD_FAILURE() << "the probe left no result:\n" << run.out.substr(0, 2000) << run.err;
      return Json();
    }
    const size_t close = run.out.find('"', at + open.size());
    return parse_json(html_unescaped(run.out.substr(at + open.size(), close - at - open.size())), "glyph probe");
  };

  const Json result = probe_glyphs("", "profile");
  ASSERT_TRUE(result.is_object());
  EXPECT_TRUE(result["control"].get<bool>()) << "two missing characters should look alike, and unlike \"A\": "
                                             << result.dump();
  std::set<std::string> chars;
  for (const Json& ch : result["chars"]) chars.insert(ch.get<std::string>());
  for (const char* ch : {"안", "녕", "하", "세", "요", "世", "界", "你", "好"}) EXPECT_TRUE(chars.count(ch)) << ch;
  EXPECT_EQ(result["fonts"].size(), 2u) << "the page's two stacks (text and monospace): " << result.dump();
  EXPECT_TRUE(result["tofu"].empty()) << "drawn as missing-glyph boxes (install fonts-wqy-microhei): "
                                      << result["tofu"].dump();
  EXPECT_TRUE(result["blank"].empty()) << "not drawn at all: " << result["blank"].dump();

  // The probe tells a missing font when it sees one: with only the DejaVu fonts (no CJK)
  // every character is a box.
  const std::string dejavu = "/usr/share/fonts/truetype/dejavu";
  struct stat st {};
  if (::stat(dejavu.c_str(), &st) != 0) return;
  test::write_string(tmp.file("fonts.conf"), "<?xml version=\"1.0\"?><fontconfig><dir>" + dejavu +
                                                 "</dir><cachedir>" + tmp.file("fc-cache") +
                                                 "</cachedir></fontconfig>\n");
  const Json without = probe_glyphs("FONTCONFIG_FILE=" + shell_quote(tmp.file("fonts.conf")) + " ", "profile-dejavu");
  ASSERT_TRUE(without.is_object());
  EXPECT_EQ(without["tofu"].size() + without["blank"].size(), without["chars"].size() * without["fonts"].size())
      << without.dump();
}

}  // namespace
}  // namespace glass
