// glass chat driven through stdin, and glass run --chat.
#include <gtest/gtest.h>

#include "base/json_fields.h"
#include "support/test_support.h"

namespace glass {
namespace {

TEST(Chat, OneReplyPerLineEachEndingAtImEnd) {
  const auto r = test::run_glass("chat --seed 3 -n 200 --format jsonl", "Hello\nHow are you?\n\nTell me more\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto replies = test::json_lines(r.out);
  ASSERT_EQ(replies.size(), 3u) << r.out;  // the empty line is skipped
  for (const Json& j : replies) {
    EXPECT_EQ(j["finish_reason"], "eos") << j.dump();  // the demo model ends turns with <|im_end|>
    EXPECT_EQ(j["reply"].get<std::string>().find("<|im_end|>"), std::string::npos);
  }
  // The conversation is kept: each prompt holds the turns before it.
  EXPECT_LT(replies[0]["prompt_tokens"], replies[1]["prompt_tokens"]);
  EXPECT_LT(replies[1]["prompt_tokens"], replies[2]["prompt_tokens"]);
}

TEST(Chat, LaterTurnsReuseTheEarlierTurnsBlocksAndReplyTheSame) {
  std::string first;
  for (int i = 0; i < 300; ++i) first += "word ";
  const std::string input = first + "\nAnd now?\nOne more?\n";
  const auto warm = test::run_glass("chat --seed 3 -n 12 --format jsonl", input);
  const auto cold = test::run_glass("chat --seed 3 -n 12 --format jsonl --no-prefix-cache", input);
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  const auto w = test::json_lines(warm.out);
  const auto c = test::json_lines(cold.out);
  ASSERT_EQ(w.size(), 3u);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(w[0]["cached_tokens"], 0);
  for (size_t turn = 0; turn < 3; ++turn) {
    EXPECT_EQ(w[turn]["reply"], c[turn]["reply"]) << "turn " << turn;
    EXPECT_EQ(w[turn]["prompt_tokens"], c[turn]["prompt_tokens"]);
    EXPECT_EQ(c[turn]["cached_tokens"], 0);
    EXPECT_GE(w[turn]["seconds_to_first_token"].get<double>(), 0.0);
    EXPECT_GE(w[turn]["seconds"].get<double>(), w[turn]["seconds_to_first_token"].get<double>());
  }
  // All but the tail of the conversation before each new turn comes from the cache.
  for (size_t turn = 1; turn < 3; ++turn) {
    EXPECT_GT(w[turn]["cached_tokens"].get<int64_t>(), w[turn - 1]["prompt_tokens"].get<int64_t>() - 16) << turn;
    EXPECT_EQ(w[turn]["cached_tokens"].get<int64_t>() % 16, 0);
  }
}

TEST(Chat, ResetSystemAndExit) {
  const auto r = test::run_glass("chat --seed 1 -n 50 --format jsonl",
                                 "Hello\nAgain\n/reset\nHello\n/system Be brief.\nHello\n/exit\nNot read\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto replies = test::json_lines(r.out);
  ASSERT_EQ(replies.size(), 4u);
  EXPECT_EQ(replies[2]["prompt_tokens"], replies[0]["prompt_tokens"]);  // /reset forgot the first two turns
  EXPECT_EQ(replies[2]["reply"], replies[0]["reply"]);                  // same prompt, same seed
  // "Be brief." replaces the template's default system message ("You are Qwen, ..."), and
  // the conversation was reset, so the prompt is shorter.
  EXPECT_LT(replies[3]["prompt_tokens"], replies[2]["prompt_tokens"]);
}

TEST(Chat, TextModeStreamsReplies) {
  const auto r = test::run_glass("chat --seed 3 -n 200", "Hello\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = test::run_glass("chat --seed 3 -n 200 --format jsonl", "Hello\n");
  EXPECT_EQ(r.out, test::json_lines(j.out)[0]["reply"].get<std::string>() + "\n");
}

// Issue 24 item 17: through a pipe, replies started with a space (the first token's, e.g.
// " squid") and /reset and /system said nothing.
TEST(Chat, ThroughAPipeRepliesStartAtTheirTextAndCommandsAreAcknowledged) {
  // The demo model's first token for "Hello" with seed 1 starts with a space.
  const auto raw = test::run_glass("run --chat -p Hello --seed 1 -n 1 --format json");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  ASSERT_EQ(test::json_lines(raw.out).back()["text"].get<std::string>().substr(0, 1), " ") << raw.out;

  const std::string chat = test::shell_quote(test::glass_binary()) + " chat --seed 1 -n 30";
  const auto r = test::run_command("printf 'Hello\\n/reset\\n/system Be brief.\\n/system\\n' | " + chat);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_NE(r.out[0], ' ') << r.out;
  const auto j = test::run_command("printf 'Hello\\n' | " + chat + " --format jsonl");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const std::string reply = test::json_lines(j.out)[0]["reply"];
  EXPECT_EQ(r.out, reply + "\n");
  // The rest of the first token stays: " squid" shows as "squid".
  EXPECT_EQ(reply.substr(0, 5), test::json_lines(raw.out).back()["text"].get<std::string>().substr(1, 5));
  EXPECT_NE(r.err.find("glass: conversation reset\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("glass: system message set; conversation reset\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("glass: system message cleared; conversation reset\n"), std::string::npos) << r.err;
}

TEST(Chat, StopsAtImEndOnAModelThatAlwaysEnds) {
  test::TempDir dir;
  test::write_constant_token_model(dir.path(), 151645);
  // The tokenizer files came from the demo model; the chat template lives in tokenizer_config.json.
  const auto r = test::run_glass("chat -m " + test::shell_quote(dir.path()) + " --format jsonl", "Hi\nHi again\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto replies = test::json_lines(r.out);
  ASSERT_EQ(replies.size(), 2u);
  for (const Json& j : replies) {
    EXPECT_EQ(j["finish_reason"], "eos");
    EXPECT_EQ(j["reply"], "");
    EXPECT_EQ(j["completion_tokens"], 1);
  }
}

TEST(RunChat, WrapsThePromptWithTheChatTemplate) {
  const auto r = test::run_glass("run --chat -p 'Hi there' --system 'Be brief.' -n 3 --greedy --ignore-eos --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = test::json_lines(r.out).back();
  // The same prompt rendered by glass chat-template and tokenized with special tokens.
  test::TempDir tmp;
  test::write_string(tmp.file("m.json"), R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi there"}])");
  const auto rendered = test::run_glass("chat-template --messages " + test::shell_quote(tmp.file("m.json")));
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  EXPECT_NE(rendered.out.find("<|im_start|>system\nBe brief.<|im_end|>"), std::string::npos) << rendered.out;
  test::write_string(tmp.file("text.jsonl"), Json(rendered.out).dump() + "\n");
  const auto ids = test::run_glass("tokenize --jsonl < " + test::shell_quote(tmp.file("text.jsonl")));
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(j["usage"]["prompt_tokens"], Json::parse(ids.out).size());
  const auto bad = test::run_glass("run --chat --ids 1");
  EXPECT_NE(bad.exit_code, 0);
}

}  // namespace
}  // namespace glass
