// llama.cpp's spellings of glass's flags: each sets what the glass spelling sets.
#include <gtest/gtest.h>

#include "base/json_fields.h"
#include "cli/generation_options.h"
#include "cli/llama_flags.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::run_glass;
using test::shell_quote;

// What a run made, without the seed (random unless given) and the timings on stderr.
struct RunOutcome {
  Json ids, usage;
  std::string finish_reason;
  bool operator==(const RunOutcome&) const = default;
};

RunOutcome run_json(const std::string& args) {
  const auto r = run_glass("run --format json " + args);
  EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
  if (r.exit_code != 0) return {};
  const Json j = test::json_lines(r.out).back();
  return {j["ids"], j["usage"], j["finish_reason"].get<std::string>()};
}

TEST(LlamaFlags, TempIsTemperature) {
  const std::string rest = " -p 'Once upon a time' -n 8 --seed 5 --top-k 0 --top-p 1 --ignore-eos";
  EXPECT_EQ(run_json("--temp 0" + rest), run_json("--temperature 0" + rest));
  EXPECT_EQ(run_json("--temp 1.5" + rest), run_json("--temperature 1.5" + rest));
  // Each sets the temperature: hot sampling and greedy decoding pick different tokens here.
  EXPECT_NE(run_json("--temp 1.5" + rest), run_json("--temp 0" + rest));
}

TEST(LlamaFlags, NPredictIsMaxNewTokens) {
  const RunOutcome n = run_json("-p Hello --greedy --ignore-eos --n-predict 6");
  EXPECT_EQ(n.ids.size(), 6u);
  EXPECT_EQ(n, run_json("-p Hello --greedy --ignore-eos --max-new-tokens 6"));
}

TEST(LlamaFlags, ShortSeedIsSeed) {
  const std::string rest = " -p Hello -n 6 --temperature 1.3 --top-k 0 --top-p 1 --ignore-eos";
  const auto r = run_glass("run --format json -s 1234" + rest);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::json_lines(r.out).back()["seed"], 1234);
  EXPECT_EQ(run_json("-s 1234" + rest), run_json("--seed 1234" + rest));
}

TEST(LlamaFlags, RepeatPenaltyIsRepetitionPenalty) {
  const std::string rest = " -p 'the the the the' -n 8 --greedy --ignore-eos";
  EXPECT_EQ(run_json("--repeat-penalty 1.8" + rest), run_json("--repetition-penalty 1.8" + rest));
  const auto bad = run_glass("run --repeat-penalty 0" + rest);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--repetition-penalty"), std::string::npos) << bad.err;
}

TEST(LlamaFlags, LogitBiasTakesLlamaCppsSyntax) {
  EXPECT_EQ(cli::parse_logit_bias_flag("15043+1"), (TokenBias{15043, 1.0f}));
  EXPECT_EQ(cli::parse_logit_bias_flag("15043-100"), (TokenBias{15043, -100.0f}));
  EXPECT_EQ(cli::parse_logit_bias_flag("0+0.5"), (TokenBias{0, 0.5f}));
  EXPECT_EQ(cli::parse_logit_bias_flag("7+1e2"), (TokenBias{7, 100.0f}));
  for (const char* bad : {"15043", "+1", "-1+1", "15043+", "15043+-1", "15043--1", "15043+x", "15043+1x", "x+1",
                          "15043 +1", "99999999999+1", "15043+inf", "15043-101", "", "15043=1"}) {
    const std::string e = test::thrown_error([&] { cli::parse_logit_bias_flag(bad); });
    EXPECT_NE(e.find("--logit-bias"), std::string::npos) << bad << ": " << e;
  }
}

TEST(LlamaFlags, LogitBiasSteersGreedyDecoding) {
  const std::string rest = " -p Hello -n 5 --greedy --ignore-eos";
  const RunOutcome plain = run_json(rest);
  ASSERT_EQ(plain.ids.size(), 5u);
  // +100 on a token the model never picks makes it the argmax at every step.
  const RunOutcome forced = run_json("--logit-bias 100+100" + rest);
  EXPECT_EQ(forced.ids, Json::parse("[100, 100, 100, 100, 100]"));
  // -100 on the first token greedy picks: something else comes first.
  const int first = plain.ids[0].get<int>();
  const RunOutcome banned = run_json("--logit-bias " + std::to_string(first) + "-100" + rest);
  EXPECT_NE(banned.ids[0].get<int>(), first);
  for (const char* bad : {"--logit-bias 100+x", "--logit-bias 100+1 --logit-bias 100-1", "--logit-bias 999999999+1"}) {
    const auto r = run_glass(std::string("run ") + bad + rest);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--logit-bias"), std::string::npos) << bad << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << bad;
  }
}

TEST(LlamaFlags, ShortCIsCtxSize) {
  for (const char* flag : {"-c", "--ctx-size"}) {
    const auto r = run_glass(std::string("run -p 'Hello there' --greedy --ignore-eos -n 20 ") + flag + " 6");
    ASSERT_EQ(r.exit_code, 0) << flag << ": " << r.err;
    EXPECT_NE(r.err.find("the context (6 tokens) is full"), std::string::npos) << flag << ": " << r.err;
  }
  for (const char* command : {"chat", "serve"}) {
    const auto help = run_glass(std::string(command) + " --help");
    EXPECT_NE(help.out.find("-c,--ctx-size"), std::string::npos) << command << ": " << help.out;
  }
}

TEST(LlamaFlags, FileIsThePrompt) {
  test::TempDir tmp;
  test::write_string(tmp.file("prompt.txt"), "Hello, my name is\n");  // the newline an editor adds is dropped
  const std::string rest = " -n 5 --greedy --ignore-eos";
  EXPECT_EQ(run_json("-f " + shell_quote(tmp.file("prompt.txt")) + rest), run_json("-p 'Hello, my name is'" + rest));
  EXPECT_EQ(run_json("--file " + shell_quote(tmp.file("prompt.txt")) + rest), run_json("-p 'Hello, my name is'" + rest));
  const auto missing = run_glass("run -f " + shell_quote(tmp.file("absent.txt")) + rest);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("-f: " + tmp.file("absent.txt")), std::string::npos) << missing.err;
}

TEST(LlamaFlags, EscapeTurnsBackslashNIntoANewline) {
  const std::string rest = " -n 4 --greedy --ignore-eos";
  const RunOutcome escaped = run_json("-e -p 'a\\n\\nb'" + rest);
  EXPECT_EQ(escaped, run_json("-p \"$(printf 'a\\n\\nb')\"" + rest));
  EXPECT_EQ(escaped, run_json("--escape -p 'a\\n\\nb'" + rest));
  // Without -e the backslashes are text: "a\\n\\nb" is 4 tokens, "a", "\n\n", "b" 3. (The
  // prompt's length tells them apart: the demo model's replies hang on the prompt's last
  // token, "b" in both.)
  const RunOutcome plain = run_json("-p 'a\\n\\nb'" + rest);
  EXPECT_EQ(escaped.usage["prompt_tokens"], 3);
  EXPECT_EQ(plain.usage["prompt_tokens"], 4);
}

TEST(LlamaFlags, ProcessEscapesAsLlamaCpp) {
  using cli::process_escapes;
  EXPECT_EQ(process_escapes("a\\nb\\tc\\rd"), "a\nb\tc\rd");
  EXPECT_EQ(process_escapes("\\\\n"), "\\n");  // an escaped backslash, then a plain n
  EXPECT_EQ(process_escapes("\\'\\\""), "'\"");
  EXPECT_EQ(process_escapes("\\x41\\x4a"), "AJ");
  EXPECT_EQ(process_escapes("\\xZ1 \\q end\\"), "\\xZ1 \\q end\\");  // not escapes: kept
  EXPECT_EQ(process_escapes(""), "");
}

TEST(LlamaFlags, NglIsAcceptedWithANote) {
  const std::string rest = " -p Hello -n 4 --greedy --ignore-eos";
  for (const char* flag : {"-ngl 99", "--n-gpu-layers 99"}) {
    const auto r = run_glass(std::string("run ") + flag + rest);
    ASSERT_EQ(r.exit_code, 0) << flag << ": " << r.err;
    EXPECT_NE(r.err.find("-ngl/--n-gpu-layers 99 ignored: this build runs on the CPU"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, run_glass("run" + rest).out);
  }
  const auto bench = run_glass("bench -p 8 -n 2 -r 1 -ngl 99 --no-bandwidth --no-peak");
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.err.find("-ngl/--n-gpu-layers 99 ignored"), std::string::npos) << bench.err;
  // A command that runs no model does not take it, and says so in the user's spelling.
  const auto inspect = run_glass("inspect -ngl 99");
  EXPECT_NE(inspect.exit_code, 0);
  EXPECT_NE(inspect.err.find("glass inspect: unknown option '-ngl'"), std::string::npos) << inspect.err;
}

TEST(LlamaFlags, ConversationOnRunPointsToChat) {
  for (const char* flag : {"-cnv", "-i", "--interactive", "--conversation"}) {
    const auto r = run_glass(std::string("run ") + flag + " -m " + shell_quote(test::demo_model_dir()) + " -p hi");
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_NE(r.err.find("glass run generates once; for a conversation run: glass chat -m " + test::demo_model_dir()),
              std::string::npos)
        << flag << ": " << r.err;
  }
  // On chat they are what it does anyway.
  const auto chat = run_glass("chat -cnv -n 3 --greedy --format jsonl", "Hello\n");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(test::json_lines(chat.out).size(), 1u) << chat.out;
}

TEST(LlamaFlags, UnknownFlagIsOneLineWithTheClosest) {
  const auto r = run_glass("run --temprature 0.5 -p hi");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("glass run: unknown option '--temprature'; did you mean '--temperature'?\n", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;  // not CLI11's list, values first
  EXPECT_EQ(r.err.find("0.5"), std::string::npos) << r.err;
  const auto serve = run_glass("serve --n-predit 5");
  EXPECT_NE(serve.err.find("unknown option '--n-predit'; did you mean '--n-predict'?"), std::string::npos) << serve.err;
}

}  // namespace
}  // namespace glass
