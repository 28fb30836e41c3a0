// glass run end to end on the demo model and on purpose-built checkpoints.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/json_fields.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::run_glass;
using test::shell_quote;

Json parse_last_line(const std::string& out) { return test::json_lines(out).back(); }

TEST(Run, JsonResultHasIdsTextFinishAndUsage) {
  const auto r = run_glass("run --ids '9707 11 1879' -n 5 --greedy --ignore-eos --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_last_line(r.out);
  EXPECT_EQ(j["ids"].size(), 5u);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["total_tokens"], 8);
  EXPECT_TRUE(j["text"].is_string());
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;  // timing on stderr
}

TEST(Run, StreamedTextEqualsTheFinalText) {
  const auto streamed = run_glass("run -p 'Hello, my name is' -n 12 --seed 7");
  const auto json = run_glass("run -p 'Hello, my name is' -n 12 --seed 7 --format json");
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(streamed.out, parse_last_line(json.out)["text"].get<std::string>() + "\n");
}

TEST(Run, SameSeedSameTokens) {
  const auto a = run_glass("run -p 'Once upon a time' -n 10 --seed 42 --temperature 1.2 --top-k 0 --top-p 1 --format json");
  const auto b = run_glass("run -p 'Once upon a time' -n 10 --seed 42 --temperature 1.2 --top-k 0 --top-p 1 --format json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(parse_last_line(a.out)["ids"], parse_last_line(b.out)["ids"]);
  EXPECT_EQ(parse_last_line(a.out)["seed"], 42);
}

TEST(Run, ShowTopAndNdjson) {
  const auto r = run_glass("run --ids 9707 -n 3 --seed 1 --show-top 4 --format ndjson");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Json> lines = test::json_lines(r.out);
  ASSERT_EQ(lines.size(), 4u);  // three steps and the result
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[i]["type"], "step");
    EXPECT_EQ(lines[i]["step"], i);
    EXPECT_EQ(lines[i]["top"].size(), 4u);
    EXPECT_TRUE(lines[i]["chosen"]["prob_before"].is_number());
    EXPECT_FALSE(lines[i]["processors"].empty());  // the demo's generation_config has top_k, top_p, ...
  }
  EXPECT_EQ(lines[3]["type"], "done");
  // In text mode (asked for: stdout is a pipe here) the tables go to stderr, the
  // continuation to stdout.
  const auto t = run_glass("run --ids 9707 -n 2 --seed 1 --show-top 3 --format text");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("step 0: chose"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("p before"), std::string::npos) << t.err;
}

TEST(Run, BatchOfPromptsMatchesSinglePrompts) {
  const auto batch = run_glass("run --ids '9707 11' --ids '1 2 3 4 5 6' --ids 42 -n 6 --greedy --format json");
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  const std::vector<Json> results = test::json_lines(batch.out);
  ASSERT_EQ(results.size(), 3u);
  const char* prompts[] = {"9707 11", "1 2 3 4 5 6", "42"};
  for (int i = 0; i < 3; ++i) {
    const auto alone = run_glass(std::string("run --ids '") + prompts[i] + "' -n 6 --greedy --format json");
    EXPECT_EQ(results[i]["ids"], parse_last_line(alone.out)["ids"]) << prompts[i];
    EXPECT_EQ(results[i]["sequence"], i);
  }
}

TEST(Run, EosAndStopStringOnPurposeBuiltModels) {
  test::TempDir eos_model, hello_model;
  test::write_constant_token_model(eos_model.path(), 151645);
  auto r = run_glass("run -m " + shell_quote(eos_model.path()) + " -p Hi -n 8 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = parse_last_line(r.out);
  EXPECT_EQ(j["finish_reason"], "eos");
  EXPECT_EQ(j["finish"]["token"], 151645);
  EXPECT_EQ(j["finish"]["token_text"], "<|im_end|>");
  EXPECT_EQ(j["text"], "");
  test::write_constant_token_model(hello_model.path(), 9707);
  r = run_glass("run -m " + shell_quote(hello_model.path()) + " -p Hi -n 8 --stop loHel");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hel\n");
  EXPECT_NE(r.err.find("stopped at the stop string \"loHel\""), std::string::npos) << r.err;
}

TEST(Run, RefusesInvalidParametersNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--temperature -1", "--temperature"},
      {"--top-p 0", "--top-p"},
      {"--top-p 1.5", "--top-p"},
      {"--top-k -1", "--top-k"},
      {"--min-p 2", "--min-p"},
      {"--min-p -0.1", "--min-p"},
      {"--repetition-penalty 0", "--repetition-penalty"},
      {"-n -1", "--max-new-tokens"},
      {"--stop ''", "--stop"},
      {"--greedy --sample", "--greedy"},
      {"--format yaml", "--format"},
      {"--chain-order random", "--chain-order"},
  };
  for (const auto& [args, expect] : cases) {
    const auto r = run_glass("run --ids 9707 " + args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(expect), std::string::npos) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
  auto r = run_glass("run");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("-p TEXT, -f FILE or --ids"), std::string::npos) << r.err;
  r = run_glass("run --ids 999999");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("outside the model's vocabulary"), std::string::npos) << r.err;
}


// llama.cpp's -1 means a random seed; the seed used is reported in text mode too.
TEST(Run, SeedMinusOneIsRandomAndTheSeedIsReported) {
  const std::string args = "run -p 'Once upon a time' -n 8 --temperature 1.5 --top-k 0 --top-p 1 --seed -1";
  const auto a = run_glass(args + " --format json");
  const auto b = run_glass(args + " --format json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(parse_last_line(a.out)["seed"], parse_last_line(b.out)["seed"]);
  EXPECT_NE(parse_last_line(a.out)["seed"], 18446744073709551615ull);
  const auto t = run_glass("run -p 'Once upon a time' -n 3 --seed 1234");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("; seed 1234\n"), std::string::npos) << t.err;
  const auto random = run_glass("run -p 'Once upon a time' -n 3");
  ASSERT_EQ(random.exit_code, 0) << random.err;
  EXPECT_NE(random.err.find("; seed "), std::string::npos) << random.err;
  for (const char* bad : {"-2", "abc", "1.5", "18446744073709551616"}) {
    const auto r = run_glass(std::string("run -p hi -n 1 --seed ") + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--seed: must be -1 (random) or an integer"), std::string::npos) << r.err;
  }
}

// transformers' default: 20 new tokens when neither -n nor generation_config.json sets
// a limit; the summary says that this limit ended the run.
TEST(Run, DefaultLimitIsTwentyNewTokens) {
  const auto r = run_glass("run --ids 9707 --ignore-eos --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_last_line(r.out)["ids"].size(), 20u);
  EXPECT_NE(r.err.find("stopped after 20 new tokens, the default limit"), std::string::npos) << r.err;
  test::TempDir tmp;
  const std::string dir = tmp.file("model");
  std::filesystem::copy(test::demo_model_dir(), dir, std::filesystem::copy_options::recursive);
  test::write_string(dir + "/generation_config.json", R"({"max_new_tokens": 7, "eos_token_id": 151645})");
  const auto c = run_glass("run -m " + shell_quote(dir) + " --ids 9707 --ignore-eos --format json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(parse_last_line(c.out)["ids"].size(), 7u);
  const auto n = run_glass("run --ids 9707 --ignore-eos -n 25 --format json");
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_EQ(parse_last_line(n.out)["ids"].size(), 25u);
  EXPECT_NE(n.err.find("stopped after 25 new tokens (the -n limit)"), std::string::npos) << n.err;
}

// The summary: singular and plural, prompt and decode time apart, every prompt's own end.
TEST(Run, SummarySaysWhatHappenedToEachPrompt) {
  const auto one = run_glass("run --ids 9707 -n 4 --ignore-eos --seed 3");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.err.find("prompt 1 token in "), std::string::npos) << one.err;
  EXPECT_NE(one.err.find("generated 4 tokens, 3 of them by decoding in "), std::string::npos) << one.err;
  EXPECT_NE(one.err.find("loaded in "), std::string::npos) << one.err;
  const auto none = run_glass("run --ids 9707 -n 0");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.err.find("prompt 1 token, not run (nothing to generate)"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("generated 0 tokens"), std::string::npos) << none.err;
  const auto batch = run_glass("run -p 'Hello' -p 'Hi there' -n 5 --ignore-eos --seed 9");
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  EXPECT_NE(batch.err.find("glass: [0] stopped after 5 new tokens (the -n limit); seed 9\n"), std::string::npos)
      << batch.err;
  EXPECT_NE(batch.err.find("glass: [1] stopped after 5 new tokens (the -n limit); seed 9\n"), std::string::npos)
      << batch.err;
  EXPECT_EQ(batch.err.find("glass: done"), std::string::npos) << batch.err;
}

// --show-top N: a sampled token from below the top N gets its own row with its rank.
TEST(Run, ShowTopShowsAChosenTokenOutsideTheTopN) {
  // Sampling from the whole distribution at a high temperature picks below the top 3 at
  // most steps.
  const auto r = run_glass(
      "run --ids 9707 -n 12 --seed 5 --temperature 3 --top-k 0 --top-p 1 --ignore-eos --show-top 3 --format ndjson");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int below = 0;
  for (const Json& line : test::json_lines(r.out)) {
    if (line["type"] != "step") continue;
    const int64_t rank = line["chosen"]["rank"];
    ASSERT_GE(rank, 1);
    bool listed = false;
    for (size_t i = 0; i < line["top"].size(); ++i)
      if (line["top"][i]["id"] == line["token"]) {
        listed = true;
        EXPECT_EQ(rank, static_cast<int64_t>(i) + 1);
      }
    EXPECT_EQ(listed, rank <= 3);
    below += rank > 3;
  }
  ASSERT_GT(below, 0) << "no step chose below the top 3; pick another seed";
  const auto t = run_glass(
      "run --ids 9707 -n 12 --seed 5 --temperature 3 --top-k 0 --top-p 1 --ignore-eos --show-top 3 --format text");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  // Every step's table ends with the chosen row, marked.
  size_t chosen_rows = 0;
  for (size_t at = t.err.find("<- chosen"); at != std::string::npos; at = t.err.find("<- chosen", at + 1)) ++chosen_rows;
  EXPECT_EQ(chosen_rows, 12u) << t.err;
  EXPECT_NE(t.err.find("   ...\n"), std::string::npos) << t.err;
}

// What a terminal is left showing: both streams, the line ends as \n, and a line that
// "\r ESC[K" erased gone (how the progress bars draw and erase themselves).
std::string terminal_text(const std::string& screen) {
  std::string out;
  for (size_t i = 0; i < screen.size(); ++i) {
    if (screen.compare(i, 4, "\r\033[K") == 0) {
      const size_t line_start = out.rfind('\n');
      out.resize(line_start == std::string::npos ? 0 : line_start + 1);
      i += 3;
    } else if (screen.compare(i, 2, "\r\n") == 0) {
      out += '\n';
      ++i;
    } else {
      out += screen[i];
    }
  }
  return out;
}

// --show-top at a terminal: the tables are the stream, each step's header on a line of its
// own, and the text follows whole on its own line.
TEST(Run, ShowTopOnATerminalKeepsTablesAndTextOnSeparateLines) {
  if (!test::pseudo_terminals_available()) GTEST_SKIP() << "no pseudo-terminal can be opened here (/dev/pts)";
  const std::string args = "run -p 'Hello, my name is' -n 6 --seed 3 --ignore-eos";
  const auto json = run_glass(args + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const std::string text = parse_last_line(json.out)["text"];
  ASSERT_FALSE(text.empty());
  const auto t = test::run_glass_in_terminal(args + " --show-top 3");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const std::string screen = terminal_text(t.out);
  size_t steps = 0, last_table_row = 0;
  for (size_t at = screen.find("step "); at != std::string::npos; at = screen.find("step ", at + 1)) {
    if (screen.compare(at, 5 + std::to_string(steps).size() + 1, "step " + std::to_string(steps) + ":") != 0) continue;
    EXPECT_TRUE(at == 0 || screen[at - 1] == '\n') << "step " << steps << " does not start a line:\n" << screen;
    ++steps;
  }
  EXPECT_EQ(steps, 6u) << screen;
  last_table_row = screen.rfind("<- chosen");
  ASSERT_NE(last_table_row, std::string::npos) << screen;
  // After the last table: the generated text, alone on its line.
  const size_t text_at = screen.find("\n" + text + "\n", last_table_row);
  EXPECT_NE(text_at, std::string::npos) << "text \"" << text << "\" not on a line of its own:\n" << screen;
}

// --show-top with stdout a pipe and no --format: the same information as ndjson on
// stdout, no tables on stderr.
TEST(Run, ShowTopToAPipeIsNdjson) {
  const auto r = run_glass("run --ids 9707 -n 3 --seed 1 --show-top 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Json> lines = test::json_lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[i]["type"], "step");
    EXPECT_EQ(lines[i]["top"].size(), 4u);
    EXPECT_TRUE(lines[i]["chosen"].contains("rank"));
  }
  EXPECT_EQ(lines[3]["type"], "done");
  EXPECT_EQ(r.err.find("p before"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--format text"), std::string::npos) << r.err;  // says how to get the tables
}

std::string long_prompt_ids(int n) {
  std::string ids;
  for (int i = 0; i < n; ++i) ids += std::to_string(100 + i % 5000) + " ";
  return ids;
}

// Progress bars (loading; a prompt longer than one pass) are drawn on a terminal only,
// and not with --quiet; every run's summary has the load time and peak memory.
TEST(Run, ProgressBarsOnATerminalOnly) {
  if (!test::pseudo_terminals_available()) GTEST_SKIP() << "no pseudo-terminal can be opened here (/dev/pts)";
  const std::string args = "run --ids '" + long_prompt_ids(700) + "' -n 2 --seed 1";
  const auto piped = run_glass(args);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("loading ["), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("prompt ["), std::string::npos) << piped.err;
  EXPECT_NE(piped.err.find("loaded in "), std::string::npos) << piped.err;
  EXPECT_NE(piped.err.find("peak memory "), std::string::npos) << piped.err;
  EXPECT_NE(piped.err.find(" (weights "), std::string::npos) << piped.err;
  EXPECT_NE(piped.err.find(", KV cache "), std::string::npos) << piped.err;

  const auto shown = test::run_glass_in_terminal(args);
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_NE(shown.out.find("\r\033[Kloading ["), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("\r\033[Kprompt ["), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("of 700 tokens"), std::string::npos) << shown.out;
  // Each bar is erased before what follows: no bar is left on the screen.
  const std::string screen = terminal_text(shown.out);
  EXPECT_EQ(screen.find("loading ["), std::string::npos) << screen;

  const auto quiet = test::run_glass_in_terminal(args + " --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("loading ["), std::string::npos) << quiet.out;
  EXPECT_EQ(quiet.out.find("prompt ["), std::string::npos) << quiet.out;
}

// Constrained decoding from the command line: GBNF text or file, a JSON schema; the
// demo model (random weights) then writes only what the grammar allows.
TEST(Run, GrammarAndJsonSchemaConstrainTheOutput) {
  test::TempDir tmp;
  for (int seed = 1; seed <= 2; ++seed) {
    const auto r = run_glass(str_cat("run -p 'Code:' -n 40 --seed ", seed,
                                     R"( --format json --grammar 'root ::= "id-" [0-9]{2,4} ("." [a-c])?')"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = parse_last_line(r.out);
    const std::string text = j["text"];
    EXPECT_EQ(j["finish_reason"], "eos") << text;
    ASSERT_TRUE(text.starts_with("id-")) << text;
    const std::string rest = text.substr(3);
    const size_t digits = rest.find_first_not_of("0123456789");
    const size_t n = digits == std::string::npos ? rest.size() : digits;
    EXPECT_TRUE(n >= 2 && n <= 4) << text;
    if (digits != std::string::npos) {
      EXPECT_EQ(rest.size(), n + 2) << text;
      EXPECT_EQ(rest[n], '.') << text;
      EXPECT_TRUE(rest[n + 1] >= 'a' && rest[n + 1] <= 'c') << text;
    }
  }
  test::write_string(tmp.file("answer.gbnf"), "# yes or no\nroot ::= answer \"!\"\nanswer ::= \"yes\" | \"no\"\n");
  for (const std::string flag : {"--grammar", "--grammar-file"}) {
    const auto r = run_glass("run -p 'Q:' -n 10 --seed 5 --format json " + flag + " " + shell_quote(tmp.file("answer.gbnf")));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string text = parse_last_line(r.out)["text"];
    EXPECT_TRUE(text == "yes!" || text == "no!") << flag << ": " << text;
  }
  const std::string schema = R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})";
  test::write_string(tmp.file("schema.json"), schema);
  for (const std::string& arg : {shell_quote(schema), shell_quote(tmp.file("schema.json"))}) {
    const auto r = run_glass("run -p 'JSON:' -n 60 --seed 2 --format json -j " + arg);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = parse_last_line(r.out);
    ASSERT_EQ(j["finish_reason"], "eos") << j.dump();
    const Json value = Json::parse(j["text"].get<std::string>());
    ASSERT_TRUE(value.is_object());
    EXPECT_EQ(value.size(), 1u);
    EXPECT_TRUE(value["ok"].is_boolean());
  }
}

TEST(Run, BadGrammarsAreRefusedNamingTheFlag) {
  test::TempDir tmp;
  test::write_string(tmp.file("broken.gbnf"), "root ::= \"a\"\nitem ::= [b-\n");
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"--grammar 'root ::= [a-z'", {"--grammar", "line 1, column"}},
      {"--grammar " + shell_quote(tmp.file("broken.gbnf")), {"--grammar", "broken.gbnf", "line 2"}},
      {"--grammar-file " + shell_quote(tmp.file("missing.gbnf")), {"--grammar-file", "missing.gbnf"}},
      {"--grammar 'root ::= other'", {"--grammar", "other"}},
      {"-j '{\"type\": 5}'", {"--json-schema"}},
      {"-j '{\"type\": \"string\", \"contentEncoding\": \"base64\"}'", {"--json-schema", "contentEncoding"}},
      {"--grammar 'root ::= \"a\"' --ignore-eos", {"grammar needs an end-of-sequence token"}},
      {"--grammar 'root ::= \"a\"' -j '{}'", {"--grammar", "--json-schema"}},
  };
  for (const auto& [flags, expected] : cases) {
    const auto r = run_glass("run -p x -n 5 " + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_TRUE(r.out.empty()) << flags << ": " << r.out;
    for (const std::string& part : expected) EXPECT_NE(r.err.find(part), std::string::npos) << flags << ": " << r.err;
  }
}

TEST(Bench, GrammarReportsTheMaskCostPerStep) {
  const auto r = run_glass(R"(bench -p 0 -n 8 -r 1 --no-bandwidth --format json --grammar 'root ::= "[" [0-9]+ ("," [0-9]+)* "]"')");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_last_line(r.out);
  EXPECT_GT(j["grammar_tg_tok_s"].get<double>(), 0);
  EXPECT_GE(j["grammar_mask_ms_per_step"].get<double>(), 0);
  EXPECT_GT(j["grammar_vocabulary_ms"].get<double>(), 0);
  EXPECT_GT(j["grammar_tg_fraction"].get<double>(), 0);
}

}  // namespace
}  // namespace glass
