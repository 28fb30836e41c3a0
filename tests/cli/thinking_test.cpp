// glass run / glass chat on a model that thinks: a checkpoint that writes a Qwen3-style
// reply token by token, with the Qwen3 tokenizer and chat template.
#include <gtest/gtest.h>

#include "base/json_fields.h"
#include "support/test_support.h"

namespace glass {
namespace {

constexpr int32_t kNewline = 198, kTwoNewlines = 271, kThink = 151667, kEndThink = 151668, kImEnd = 151645;
constexpr int32_t kHmm = 80022, kMaybe = 7196, kHi = 13048;  // "Hmm", " maybe", "Hi"

// After the Qwen3 generation prompt ("<|im_start|>assistant\n"): "<think>Hmm maybe</think>\n\nHi",
// then <|im_end|>. With enable_thinking false the prompt ends "</think>\n\n", and the
// reply is "Hi" alone.
class Thinking : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    test::write_successor_model(dir_->path(),
                                {{kNewline, kThink}, {kThink, kHmm}, {kHmm, kMaybe}, {kMaybe, kEndThink},
                                 {kEndThink, kTwoNewlines}, {kTwoNewlines, kHi}, {kHi, kImEnd}},
                                test::qwen3_tokenizer_dir());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  // `command` ("run", "chat", ...) on the thinking model.
  static test::CommandResult glass(const std::string& command_line, const std::string& stdin_text = "") {
    const size_t end = std::min(command_line.find(' '), command_line.size());
    return test::run_glass(command_line.substr(0, end) + " -m " + test::shell_quote(dir_->path()) + command_line.substr(end),
                           stdin_text);
  }
  static Json run_json(const std::string& args) {
    const auto r = glass(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto lines = test::json_lines(r.out);
    return lines.empty() ? Json() : lines.back();
  }

  static test::TempDir* dir_;
};
test::TempDir* Thinking::dir_ = nullptr;

TEST_F(Thinking, RunJsonKeepsTheReasoningApartFromTheAnswer) {
  const Json j = run_json("run --chat -p Hi --format json");
  EXPECT_EQ(j["text"], "Hi");
  EXPECT_EQ(j["reasoning_content"], "Hmm maybe");
  EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(),
            (std::vector<int32_t>{kThink, kHmm, kMaybe, kEndThink, kTwoNewlines, kHi, kImEnd}));
  EXPECT_EQ(j["finish_reason"], "eos");
  EXPECT_EQ(j["usage"]["completion_tokens"], 7);
  EXPECT_EQ(j["usage"]["completion_tokens_details"]["reasoning_tokens"], 4);  // <think> through </think>
}

TEST_F(Thinking, NoThinkAndTemplateKwargsRenderWithEnableThinkingFalse) {
  for (const std::string flags : {"--no-think", "--chat-template-kwargs '{\"enable_thinking\": false}'",
                                  "--no-think --chat-template-kwargs '{\"enable_thinking\": false, \"x\": 1}'"}) {
    SCOPED_TRACE(flags);
    const Json j = run_json("run --chat -p Hi --format json " + flags);
    EXPECT_EQ(j["text"], "Hi");
    EXPECT_FALSE(j.contains("reasoning_content")) << j.dump();
    EXPECT_FALSE(j["usage"].contains("completion_tokens_details"));
    EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(), (std::vector<int32_t>{kHi, kImEnd}));
  }
  // enable_thinking true is the template's default: the reply thinks.
  EXPECT_EQ(run_json("run --chat -p Hi --format json --chat-template-kwargs '{\"enable_thinking\": true}'")["reasoning_content"],
            "Hmm maybe");
}

TEST_F(Thinking, RunTextShowsTheThinkingOnlyWhenAsked) {
  const auto hidden = glass("run --chat -p Hi");
  ASSERT_EQ(hidden.exit_code, 0) << hidden.err;
  EXPECT_EQ(hidden.out, "Hi\n");
  // Not a terminal: no note on stderr, no escape codes.
  EXPECT_EQ(hidden.err.find("thought for"), std::string::npos) << hidden.err;
  const auto shown = glass("run --chat -p Hi --show-thinking");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(shown.out, "Hmm maybe\n\nHi\n");
  const auto batch = glass("run --chat -p Hi -p Hello --show-thinking");
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  EXPECT_EQ(batch.out, "[0] Hmm maybe\n\nHi\n[1] Hmm maybe\n\nHi\n");
}

TEST_F(Thinking, NdjsonStepsCarryTheirPartOfTheSplit) {
  const auto r = glass("run --chat -p Hi --format ndjson");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = test::json_lines(r.out);
  ASSERT_EQ(lines.size(), 8u) << r.out;  // 7 steps and the end
  std::string text, reasoning;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["type"], "step");
    text += lines[i]["text"].get<std::string>();
    reasoning += lines[i]["reasoning_content"].get<std::string>();
  }
  EXPECT_EQ(lines[3]["token_text"], "</think>");  // the raw token is still there
  EXPECT_EQ(text, "Hi");
  EXPECT_EQ(reasoning, "Hmm maybe");
  EXPECT_EQ(lines.back()["type"], "done");
  EXPECT_EQ(lines.back()["text"], "Hi");
  EXPECT_EQ(lines.back()["reasoning_content"], "Hmm maybe");
}

TEST_F(Thinking, APromptThatOpensThinkingAndAReplyCutOffInsideIt) {
  // A raw prompt ending in an open <think>: the reply starts as reasoning.
  const Json open = run_json("run --ids '151644 77091 198 151667' --format json");
  EXPECT_EQ(open["ids"].get<std::vector<int32_t>>(), (std::vector<int32_t>{kHmm, kMaybe, kEndThink, kTwoNewlines, kHi, kImEnd}));
  EXPECT_EQ(open["reasoning_content"], "Hmm maybe");
  EXPECT_EQ(open["text"], "Hi");
  // Three tokens: still thinking, so there is no answer.
  const Json cut = run_json("run --chat -p Hi -n 3 --format json");
  EXPECT_EQ(cut["finish_reason"], "length");
  EXPECT_EQ(cut["reasoning_content"], "Hmm maybe");
  EXPECT_EQ(cut["text"], "");
}

TEST_F(Thinking, ChatKeepsTheReasoningOutOfTheReplyAndTheHistory) {
  const auto r = glass("chat --format jsonl", "Hi\nAgain\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto replies = test::json_lines(r.out);
  ASSERT_EQ(replies.size(), 2u);
  for (const Json& j : replies) {
    EXPECT_EQ(j["reply"], "Hi");
    EXPECT_EQ(j["reasoning_content"], "Hmm maybe");
    EXPECT_EQ(j["reasoning_tokens"], 4);
  }
  // "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", then with the answer in the
  // history "...assistant\nHi<|im_end|>\n<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n".
  EXPECT_EQ(replies[0]["prompt_tokens"], 9);
  EXPECT_EQ(replies[1]["prompt_tokens"], 21);

  const auto no_think = glass("chat --format jsonl --no-think", "Hi\n");
  ASSERT_EQ(no_think.exit_code, 0) << no_think.err;
  const Json j = test::json_lines(no_think.out).at(0);
  EXPECT_EQ(j["reply"], "Hi");
  EXPECT_FALSE(j.contains("reasoning_content"));

  const auto text = glass("chat --show-thinking", "Hi\n");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, "Hmm maybe\n\nHi\n");
  EXPECT_EQ(glass("chat", "Hi\n").out, "Hi\n");
}

TEST_F(Thinking, BadTemplateKwargsNameTheFlag) {
  struct Case {
    std::string args, in_error;
  };
  for (const Case& c : std::vector<Case>{
           {"run --chat -p Hi --chat-template-kwargs '[1]'", "--chat-template-kwargs: chat template variables must be a JSON object"},
           {"run --chat -p Hi --chat-template-kwargs '{nope'", "--chat-template-kwargs: not valid JSON"},
           {"run --chat -p Hi --chat-template-kwargs '{\"messages\": []}'", "\"messages\" cannot be set"},
           {"run --chat -p Hi --no-think --chat-template-kwargs '{\"enable_thinking\": true}'", "--no-think contradicts"},
           {"run -p Hi --no-think", "--chat"},
           {"run -p Hi --chat-template-kwargs '{}'", "--chat"},
           {"chat --chat-template-kwargs 3", "--chat-template-kwargs"},
           {"serve --chat-template-kwargs '\"x\"' --port 0", "--chat-template-kwargs: chat template variables must be a JSON object"},
       }) {
    SCOPED_TRACE(c.args);
    const auto r = glass(c.args, "Hi\n");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(c.in_error), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(ThinkingOnQwen25, NothingChangesAndNoThinkSaysItHasNoEffect) {
  const auto r = test::run_glass("run --chat -p Hi -n 4 --greedy --ignore-eos --format json --no-think");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--no-think changes nothing"), std::string::npos) << r.err;
  const Json j = test::json_lines(r.out).back();
  EXPECT_FALSE(j.contains("reasoning_content"));
  const auto plain = test::run_glass("run --chat -p Hi -n 4 --greedy --ignore-eos --format json");
  EXPECT_EQ(test::json_lines(plain.out).back()["text"], j["text"]);
}

}  // namespace
}  // namespace glass
