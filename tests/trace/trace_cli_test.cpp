// glass trace and glass compare, end to end on the demo model.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstring>

#include "base/json_fields.h"
#include "support/test_support.h"
#include "tokenizer/utf8.h"
#include "trace/npy.h"

namespace glass {
namespace {

using test::run_command;
using test::run_glass;
using test::shell_quote;
using test::TempDir;

const std::string kPrompt = "Hello, world! The capital of France is";

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string python3() { return exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

Json trace_json(const std::string& args) {
  const auto r = run_glass("trace --format json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? parse_json(r.out, "glass trace --format json") : Json();
}

const Json* stage_named(const Json& j, const std::string& name) {
  for (const Json& s : j["stages"])
    if (s["name"] == name) return &s;
  return nullptr;
}

TEST(TraceCli, TableNamesEveryStageWithItsShape) {
  // Wide enough that no line wraps, whatever $COLUMNS the tests run with.
  const auto r = run_glass("trace --width 200 -p " + shell_quote(kPrompt));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The name column is as wide as the longest name (layer3.attn_residual) and two spaces.
  const auto row = [](std::string name, const char* shape) { return name.append(22 - name.size(), ' ') + shape; };
  for (const std::string& line :
       {row("embed", "[pos=9, hidden=64]"), row("layer0.q", "[pos=9, heads=4, dim=16]"),
        row("layer0.k", "[pos=9, kv_heads=2, dim=16]"), row("layer3.attn_scores", "[pos=9, heads=4, keys=9]"),
        row("layer3.attn_weights", ""), row("layer2.mlp_act", "[pos=9, intermediate=192]"), row("final_norm", ""),
        row("logits", "[pos=9, vocab=151936]"), std::string("logit lens"), std::string("next token at position 8"),
        std::string("first values at position 8")})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_NE(r.out.find("8:374=\" is\""), std::string::npos) << "tokens with ids and text";
  EXPECT_NE(r.out.find("max |diff| 0"), std::string::npos) << "the lens at the last layer equals the logits";
}

// Display columns of each line of `text`.
size_t widest_line(const std::string& text, std::string* widest = nullptr) {
  size_t most = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    if (utf8::display_width(line) > most) {
      most = utf8::display_width(line);
      if (widest != nullptr) *widest = line;
    }
    at = end + 1;
  }
  return most;
}

// A 13-token prompt used to make a logit-lens table 244 columns wide; now it fits the
// terminal ($COLUMNS here, as a terminal's width) in stacked blocks of positions.
TEST(TraceCli, TableFitsTheTerminalWidth) {
  const std::string prompt = "The quick brown fox jumps over the lazy dog. The quick brown";
  const std::string glass = shell_quote(test::glass_binary()) + " trace -p " + shell_quote(prompt);
  auto r = run_command("COLUMNS=100 " + glass);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string widest;
  EXPECT_LE(widest_line(r.out, &widest), 100u) << widest;
  EXPECT_NE(r.out.find("\n          pos 0 \"The\" "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n          pos 5 \" over\" "), std::string::npos)
      << "a second block starts at position 5\n" << r.out;
  EXPECT_NE(r.out.find("\n          pos 10 \" The\" "), std::string::npos) << r.out;

  // --width wins over $COLUMNS; without either (not a terminal) the table takes 120 columns.
  r = run_command("COLUMNS=100 " + glass + " --width 160");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(widest_line(r.out), 120u);
  EXPECT_LE(widest_line(r.out), 160u);
  EXPECT_NE(r.out.find("\n          pos 0 \"The\" "), std::string::npos);
  EXPECT_NE(r.out.find("\n          pos 8 \" dog\" "), std::string::npos) << "blocks of 8 positions\n" << r.out;
  r = run_command("env -u COLUMNS " + glass);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(widest_line(r.out), 120u);
  EXPECT_GT(widest_line(r.out), 100u);
}

TEST(TraceCli, JsonSchema) {
  const Json j = trace_json("-p " + shell_quote(kPrompt) + " --top-k 3");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["glass_trace"], 1);
  EXPECT_EQ(j["model"]["layers"], 4);
  EXPECT_EQ(j["prompt"]["text"], kPrompt);
  EXPECT_EQ(j["prompt"]["ids"].size(), 9u);
  EXPECT_EQ(j["prompt"]["tokens"][2], " world");
  EXPECT_EQ(j["positions"].size(), 9u);
  EXPECT_EQ(j["stages"].size(), 3u + 17u * 4u);
  const Json* q = stage_named(j, "layer1.q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ((*q)["stage"], "q");
  EXPECT_EQ((*q)["layer"], 1);
  EXPECT_EQ((*q)["axes"], Json::parse(R"(["pos","heads","dim"])"));
  EXPECT_EQ((*q)["shape"]["heads"], 4);
  EXPECT_EQ((*q)["shape_text"], "[pos=9, heads=4, dim=16]");
  for (const char* f : {"rms", "min", "max"}) {
    EXPECT_TRUE((*q)[f].is_number()) << f;
    EXPECT_EQ((*q)["per_position"][f].size(), 9u) << f;
  }
  EXPECT_EQ((*q)["first"].size(), 9u);
  EXPECT_EQ((*q)["first"][0].size(), 8u);
  const Json* embed = stage_named(j, "embed");
  ASSERT_NE(embed, nullptr);
  EXPECT_TRUE((*embed)["layer"].is_null());
  const Json* out = stage_named(j, "layer2");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ((*out)["stage"], "output");
  // Scores at position 0 see one key; the padding is null in the first values.
  const Json* scores = stage_named(j, "layer0.attn_scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_TRUE((*scores)["first"][0][0].is_number());
  EXPECT_TRUE((*scores)["first"][0][1].is_null());
  EXPECT_EQ((*scores)["nonfinite"], 0) << "padding is not counted as non-finite";

  const Json& lens = j["logit_lens"];
  EXPECT_EQ(lens["top_k"], 3);
  ASSERT_EQ(lens["layers"].size(), 4u);
  EXPECT_EQ(lens["layers"][3]["name"], "layer3");
  ASSERT_EQ(lens["layers"][3]["top"].size(), 9u);
  EXPECT_EQ(lens["layers"][3]["top"][8].size(), 3u);
  for (const char* f : {"id", "text", "prob", "logit"}) EXPECT_TRUE(lens["final"][8][0].contains(f)) << f;
  EXPECT_EQ(lens["last_layer_max_abs_diff"], 0.0);
  for (size_t p = 0; p < 9; ++p)
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(lens["layers"][3]["top"][p][i]["id"], lens["final"][p][i]["id"]);
      EXPECT_EQ(lens["layers"][3]["top"][p][i]["prob"], lens["final"][p][i]["prob"]);
    }
}

TEST(TraceCli, SelectsLayersPositionsAndStages) {
  const Json j = trace_json("--ids \"9707 11 1879 0\" --layers 1-2 --positions 0,-1 --stages embed,q,output,logits");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["positions"], Json::parse("[0, 3]"));
  EXPECT_EQ(j["layers"], Json::parse("[1, 2]"));
  std::vector<std::string> names;
  for (const Json& s : j["stages"]) names.push_back(s["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"embed", "layer1.q", "layer1", "layer2.q", "layer2", "logits"}));
  const Json* q = stage_named(j, "layer1.q");
  EXPECT_EQ((*q)["shape"]["pos"], 2);
  EXPECT_EQ((*q)["positions"], Json::parse("[0, 3]"));
  EXPECT_EQ(j["logit_lens"]["layers"].size(), 2u);
  EXPECT_FALSE(j["logit_lens"].contains("last_layer_max_abs_diff")) << "layer 3 was not traced";
  EXPECT_EQ(j["prompt"]["tokens"][0], "Hello") << "--ids still names tokens when the model has a tokenizer";
}

TEST(TraceCli, RefusesBadOptions) {
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"", "give a prompt"},
      {"--ids 1 --layers 4", "--layers: \"4\" is out of range: there are 4"},
      {"--ids 1 --layers 2-1", "runs backwards"},
      {"--ids 1 --layers x", "is not an integer"},
      {"--ids \"1 2\" --positions 2", "--positions: \"2\" is out of range"},
      {"--ids \"1 2\" --positions -3", "out of range"},
      {"--ids 1 --stages q,bogus", "\"bogus\" is not a stage"},
      {"--ids 1 --format yaml", "not one of table, json"},
      {"--ids 999999", "out of range"},
      {"--ids 1 --top-k 0", "--top-k"},
      {"--ids 1 --width 30", "--width: must be between 40 and"},
  };
  for (const Case& c : cases) {
    const auto r = run_glass("trace " + c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
  }
}

TEST(TraceCli, DumpLoadsInNumpyAndEqualsTheJson) {
  TempDir tmp;
  const std::string dump = tmp.file("dump");
  const auto r = run_glass("trace --format json -p " + shell_quote(kPrompt) + " --positions 0,2,-1 --dump " + shell_quote(dump));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  test::write_string(tmp.file("trace.json"), r.out);
  const Json index = read_json_file(dump + "/index.json");
  EXPECT_EQ(index["format"], "glass-trace-dump");
  EXPECT_EQ(index["tensors"].size(), 3u + 17u * 4u);
  EXPECT_TRUE(exists(dump + "/layer0.q.npy"));
  EXPECT_TRUE(exists(dump + "/layer3.npy"));
  const NpyArray q = read_npy(dump + "/layer0.q.npy");
  EXPECT_EQ(q.shape, (std::vector<int64_t>{3, 4, 16}));

  const auto py = run_command(python3() + " " + shell_quote(GLASS_CHECK_DUMP) + " " + shell_quote(dump) + " " +
                              shell_quote(tmp.file("trace.json")));
  ASSERT_EQ(py.exit_code, 0) << "numpy check failed (needs Debian's python3-numpy):\n" << py.out << py.err;
  EXPECT_EQ(py.out, "ok " + std::to_string(3 + 17 * 4) + "\n");
}

TEST(TraceCli, DumpReplacesOnlyEarlierDumps) {
  TempDir tmp;
  const std::string dump = tmp.file("d");
  ASSERT_EQ(run_glass("trace --ids 9707 --stages embed --dump " + shell_quote(dump)).exit_code, 0);
  EXPECT_TRUE(exists(dump + "/embed.npy"));
  // An earlier dump is replaced as a whole: nothing of the old one is left.
  auto r = run_glass("trace --ids 9707 --stages final_norm --dump " + shell_quote(dump + "/"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(exists(dump + "/embed.npy"));
  EXPECT_TRUE(exists(dump + "/final_norm.npy"));
  // A folder that holds anything else is refused and left alone.
  const std::string other = tmp.file("mine");
  ::mkdir(other.c_str(), 0755);
  test::write_string(other + "/notes.txt", "keep me");
  r = run_glass("trace --ids 9707 --dump " + shell_quote(other));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not an earlier glass trace dump"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_string(other + "/notes.txt"), "keep me");
  // No temporary folders are left beside them.
  const auto ls = run_command("ls -A " + shell_quote(tmp.path()));
  EXPECT_EQ(ls.out, "d\nmine\n");
}

TEST(TraceCli, HtmlFileIsWritten) {
  TempDir tmp;
  const auto r = run_glass("trace --ids \"9707 11\" --html " + shell_quote(tmp.file("t.html")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = test::read_string(tmp.file("t.html"));
  EXPECT_NE(html.find("<table class=\"lens\">"), std::string::npos);
  EXPECT_NE(html.find("Hello"), std::string::npos);
}

// glass compare on logits from glass logits (raw) and from a dump (.npy).
class CompareCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_glass("logits --ids \"9707 11 1879\" --all-positions --out " + shell_quote(tmp_.file("a.f32"))).exit_code, 0);
    ASSERT_EQ(run_glass("trace --ids \"9707 11 1879\" --stages logits --dump " + shell_quote(tmp_.file("dump"))).exit_code, 0);
    logits_ = test::read_f32_file(tmp_.file("a.f32"));
    ASSERT_EQ(logits_.size(), 3u * 151936u);
  }
  std::string a() const { return shell_quote(tmp_.file("a.f32")); }
  std::string npy() const { return shell_quote(tmp_.file("dump/logits.npy")); }
  TempDir tmp_;
  std::vector<float> logits_;
};

TEST_F(CompareCli, RawAgainstNpyOfTheSameLogits) {
  auto r = run_glass("compare " + a() + " " + npy() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "compare");
  EXPECT_EQ(j["width"], 151936) << "the width comes from the .npy";
  ASSERT_EQ(j["positions"].size(), 3u);
  EXPECT_EQ(j["summary"]["max_abs_diff"], 0.0);
  EXPECT_EQ(j["summary"]["top1_agreement"], 1.0);
  EXPECT_EQ(j["positions"][1]["kl"], 0.0);
  r = run_glass("compare " + a() + " " + a() + " --vocab 151936");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("top-1 agreement 3/3 (100.0%)"), std::string::npos) << r.out;
  r = run_glass("compare " + a() + " " + a() + " -m " + shell_quote(test::demo_model_dir()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// llama.cpp's logits dumps are raw float32 rows next to a GGUF: -m takes the GGUF's width.
TEST_F(CompareCli, TakesTheRowWidthFromAGgufFile) {
  const std::string gguf = tmp_.file("demo.gguf");
  auto r = run_glass("convert -m " + shell_quote(test::demo_model_dir()) + " --type F16 --out " + shell_quote(gguf));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_glass("compare " + a() + " " + a() + " -m " + shell_quote(gguf) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "compare");
  EXPECT_EQ(j["width"], 151936);
  EXPECT_TRUE(j["positions"][0]["top1_a_text"].is_string()) << "the GGUF's vocabulary names the tokens";
  r = run_glass("compare " + a() + " " + a() + " -m " + shell_quote(gguf) + " --vocab 1000");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("demo.gguf's vocab_size 151936"), std::string::npos) << r.err;
}

TEST_F(CompareCli, ReportsDifferencesPerPosition) {
  std::vector<float> b = logits_;
  b[151936 + 5] += 0.5f;                                                     // position 1
  b[2 * 151936 + 7] = *std::max_element(b.begin() + 2 * 151936, b.end()) + 5;  // position 2's argmax moves
  write_npy(tmp_.file("b.npy"), {3, 151936}, b);
  auto r = run_glass("compare " + npy() + " " + shell_quote(tmp_.file("b.npy")) + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "compare");
  EXPECT_EQ(j["positions"][0]["max_abs_diff"], 0.0);
  EXPECT_NEAR(j["positions"][1]["max_abs_diff"].get<double>(), 0.5, 1e-6);
  EXPECT_GT(j["positions"][1]["kl"].get<double>(), 0.0);
  EXPECT_TRUE(j["positions"][1]["top1_agree"].get<bool>());
  EXPECT_FALSE(j["positions"][2]["top1_agree"].get<bool>());
  EXPECT_EQ(j["positions"][2]["top1_b"], 7);
  EXPECT_NEAR(j["summary"]["top1_agreement"].get<double>(), 2.0 / 3, 1e-12);
  r = run_glass("compare " + npy() + " " + shell_quote(tmp_.file("b.npy")) + " --tolerance 0.1");
  EXPECT_EQ(r.exit_code, 1) << "beyond the tolerance";
  EXPECT_NE(r.out.find("EXCEEDED"), std::string::npos) << r.out;
}

// With -m the tokenizer is known, and the top-1 columns name the tokens, quoted as the
// trace table quotes them; without it they are ids.
TEST_F(CompareCli, NamesTheTopTokensWhenTheTokenizerIsKnown) {
  std::vector<float> b = logits_;
  const int32_t chosen[3] = {99489, 1, 9707};  // "世界", "\"", "Hello"
  for (int p = 0; p < 3; ++p) {
    const auto row = b.begin() + p * 151936;
    row[chosen[p]] = *std::max_element(row, row + 151936) + 5;
  }
  write_npy(tmp_.file("b.npy"), {3, 151936}, b);
  const std::string b_npy = shell_quote(tmp_.file("b.npy"));
  const std::string model = shell_quote(test::demo_model_dir());

  auto r = run_glass("compare " + npy() + " " + b_npy + " -m " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* cell : {" 99489 \"世界\" ", " 1 \"\\\"\" ", " 9707 \"Hello\" "})
    EXPECT_NE(r.out.find(cell), std::string::npos) << cell << "\n" << r.out;
  // The columns line up: in each of the three rows the verdict starts where the header's "agree" does.
  const size_t header = r.out.find("position");
  const size_t agree = utf8::display_width(r.out.substr(header, r.out.find("agree", header) - header));
  size_t rows = 0;
  for (size_t at = r.out.find("  NO\n"); at != std::string::npos; at = r.out.find("  NO\n", at + 1), ++rows) {
    const size_t line = r.out.rfind('\n', at) + 1;
    EXPECT_EQ(utf8::display_width(r.out.substr(line, at + 2 - line)), agree) << r.out;
  }
  EXPECT_EQ(rows, 3u) << "b's top-1 differs from a's at every position\n" << r.out;

  r = run_glass("compare " + npy() + " " + b_npy + " -m " + model + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "compare");
  EXPECT_EQ(j["positions"][0]["top1_b_text"], "世界");
  EXPECT_EQ(j["positions"][1]["top1_b_text"], "\"");
  EXPECT_EQ(j["positions"][2]["top1_b_text"], "Hello");
  EXPECT_TRUE(j["positions"][0]["top1_a_text"].is_string());

  // -m as the folder's config.json finds the tokenizer beside it.
  r = run_glass("compare " + npy() + " " + b_npy + " -m " + shell_quote(test::demo_model_dir() + "/config.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" 9707 \"Hello\" "), std::string::npos) << r.out;

  // Without -m only the ids are known.
  r = run_glass("compare " + npy() + " " + b_npy);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" 99489 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("世界"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"Hello\""), std::string::npos) << r.out;
  r = run_glass("compare " + npy() + " " + b_npy + " --format json");
  EXPECT_FALSE(parse_json(r.out, "compare")["positions"][0].contains("top1_b_text"));
}

TEST_F(CompareCli, ClearErrorsForMismatchedAndBrokenInputs) {
  const std::string bytes = test::read_string(tmp_.file("dump/logits.npy"));
  test::write_string(tmp_.file("truncated.npy"), bytes.substr(0, bytes.size() - 10));
  test::write_string(tmp_.file("oversized.npy"), bytes + "extra");
  std::string lying = bytes;
  const size_t at = lying.find("(3, 151936)");
  ASSERT_NE(at, std::string::npos);
  lying.replace(at, 11, "(2, 151936)");
  test::write_string(tmp_.file("lying.npy"), lying);
  write_npy(tmp_.file("two.npy"), {2, 151936}, std::vector<float>(logits_.begin(), logits_.begin() + 2 * 151936));
  write_npy(tmp_.file("wide.npy"), {3, 10}, std::vector<float>(30, 0.0f));
  test::write_string(tmp_.file("odd.f32"), "abcde");
  test::write_string(tmp_.file("empty.f32"), "");

  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {a() + " " + a(), "give the row width with --vocab N or -m DIR"},
      {a() + " " + a() + " --vocab 1000", "not a whole number of rows of 1000"},
      {a() + " " + npy() + " --vocab 1000", "but the row width is 1000 (--vocab)"},
      {npy() + " " + shell_quote(tmp_.file("two.npy")), "the shapes differ: "},
      {a() + " " + shell_quote(tmp_.file("two.npy")), "holds 3 rows of 151936 but"},
      {npy() + " " + shell_quote(tmp_.file("wide.npy")), "the shapes differ"},
      {a() + " " + shell_quote(tmp_.file("truncated.npy")), "truncated .npy file"},
      {a() + " " + shell_quote(tmp_.file("oversized.npy")), "the header does not describe the data"},
      {a() + " " + shell_quote(tmp_.file("lying.npy")), "the header does not describe the data"},
      {shell_quote(tmp_.file("odd.f32")) + " " + a() + " --vocab 151936", "5 bytes is not a whole number of float32 values"},
      {shell_quote(tmp_.file("empty.f32")) + " " + a() + " --vocab 151936", "holds no values"},
      {shell_quote(tmp_.file("missing.f32")) + " " + a(), "missing.f32: cannot open"},
      {a() + " " + a() + " --vocab 5 -m " + shell_quote(test::demo_model_dir()), "disagrees with"},
  };
  for (const Case& c : cases) {
    const auto r = run_glass("compare " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace glass
