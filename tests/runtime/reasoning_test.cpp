#include "runtime/reasoning.h"

#include <gtest/gtest.h>

#include <random>

#include "chat/chat_template.h"
#include "runtime/chat_prompt.h"
#include "support/test_support.h"

namespace glass {
namespace {

// Feeds `pieces` one by one (then finish()) and joins what comes out.
SplitReply split_pieces(const std::vector<std::string>& pieces, bool starts_in_reasoning = false) {
  ReasoningSplitter splitter(starts_in_reasoning);
  SplitReply out;
  for (const auto& p : pieces) {
    const ReasoningPieces got = splitter.feed(p);
    out.reasoning += got.reasoning;
    out.content += got.content;
  }
  const ReasoningPieces rest = splitter.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  out.found_reasoning = splitter.found_reasoning();
  return out;
}

void expect_split(const SplitReply& got, bool found, const std::string& reasoning, const std::string& content) {
  EXPECT_EQ(got.found_reasoning, found);
  EXPECT_EQ(got.reasoning, reasoning);
  EXPECT_EQ(got.content, content);
}

const char* const kQwen3Reply =
    "<think>\nCompare the tenths first: 9.9 has nine tenths, 9.11 has one.\n</think>\n\n9.9 is larger than 9.11.";

TEST(ReasoningSplitter, SeparatesTheThinkBlockFromTheAnswer) {
  expect_split(split_reasoning(kQwen3Reply), true, "Compare the tenths first: 9.9 has nine tenths, 9.11 has one.",
               "9.9 is larger than 9.11.");
  // Whitespace inside either part stays; only the whitespace framing the tags goes.
  expect_split(split_reasoning(" \n<think>a\n\n b \n</think>\n\nline 1\n\nline 2\n"), true, "a\n\n b", "line 1\n\nline 2\n");
  // An empty think block (what Qwen3 writes when it skips thinking) is still reasoning found.
  expect_split(split_reasoning("<think>\n\n</think>\n\nHi"), true, "", "Hi");
}

TEST(ReasoningSplitter, RepliesWithoutALeadingThinkAreAllAnswerByteForByte) {
  for (const std::string reply : {"Hello", "  Hello\n", "", "\n\n", "A <think>x</think> B", "<thinking>x</thinking>",
                                  "<thi", "<", " </think> x", "<Think>x</Think>"}) {
    SCOPED_TRACE(reply);
    expect_split(split_reasoning(reply), false, "", reply);
  }
}

TEST(ReasoningSplitter, APromptThatOpenedThinkingStartsTheReplyAsReasoning) {
  expect_split(split_reasoning("\nLet me see.\n</think>\n\nYes.", true), true, "Let me see.", "Yes.");
  expect_split(split_reasoning("", true), true, "", "");
}

TEST(ReasoningSplitter, AReplyCutOffWhileThinkingIsReasoningOnly) {
  expect_split(split_reasoning("<think>\nstill going\n"), true, "still going", "");
  // A close tag that never completed is text of the reasoning.
  expect_split(split_reasoning("<think>abc\n</thi"), true, "abc\n</thi", "");
  expect_split(split_reasoning("<think>"), true, "", "");
  expect_split(split_reasoning("still going", true), true, "still going", "");
}

TEST(ReasoningSplitter, ReleasesTextAsSoonAsItIsCertainAndHoldsBackPossibleTags) {
  ReasoningSplitter s;
  auto feed = [&](const std::string& text, const std::string& reasoning, const std::string& content) {
    SCOPED_TRACE("feeding \"" + text + "\"");
    const ReasoningPieces p = s.feed(text);
    EXPECT_EQ(p.reasoning, reasoning);
    EXPECT_EQ(p.content, content);
  };
  feed("\n", "", "");  // may still be followed by <think>
  feed("<thi", "", "");
  EXPECT_FALSE(s.found_reasoning());
  feed("nk>\n", "", "");
  EXPECT_TRUE(s.found_reasoning());
  EXPECT_TRUE(s.in_reasoning());
  feed("One", "One", "");
  feed(" two\n", " two", "");  // the newline may frame the reasoning
  feed("three", "\nthree", "");
  feed("\n</th", "", "");
  feed("ere", "\n</there", "");  // not a tag after all
  feed(" </", "", "");
  feed("think>", "", "");
  EXPECT_FALSE(s.in_reasoning());
  feed("\n\n", "", "");  // the template's separator
  feed("Answer", "", "Answer");
  feed(" </think> <think>\n", "", " </think> <think>\n");  // tags in the answer are text
  const ReasoningPieces rest = s.finish();
  EXPECT_EQ(rest.reasoning, "");
  EXPECT_EQ(rest.content, "");
}

TEST(ReasoningSplitter, TagsSplitAnywhereGiveTheSameResult) {
  const std::vector<std::pair<std::string, bool>> replies = {
      {kQwen3Reply, false},
      {"\n<think>\n\n</think>\n\nHi there", false},
      {"<think>a </thin b</think>c", false},
      {"Plain answer <think> no", false},
      {"  <thinx", false},
      {"<think>cut </thi", false},
      {"reason\n</think>\n\nanswer\n", true},
  };
  std::mt19937 rng(5);
  for (const auto& [reply, open] : replies) {
    SCOPED_TRACE(reply);
    const SplitReply whole = split_reasoning(reply, open);
    // Every cut into two pieces, one character at a time, and random cuts.
    for (size_t cut = 0; cut <= reply.size(); ++cut) {
      const SplitReply two = split_pieces({reply.substr(0, cut), reply.substr(cut)}, open);
      ASSERT_EQ(two.reasoning, whole.reasoning) << "cut at " << cut;
      ASSERT_EQ(two.content, whole.content) << "cut at " << cut;
      ASSERT_EQ(two.found_reasoning, whole.found_reasoning);
    }
    std::vector<std::string> chars;
    for (char c : reply) chars.emplace_back(1, c);
    const SplitReply each = split_pieces(chars, open);
    EXPECT_EQ(each.reasoning, whole.reasoning);
    EXPECT_EQ(each.content, whole.content);
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<std::string> pieces;
      for (size_t i = 0; i < reply.size();) {
        const size_t n = std::uniform_int_distribution<size_t>(0, 4)(rng);
        pieces.push_back(reply.substr(i, n));
        i += n;
      }
      const SplitReply random = split_pieces(pieces, open);
      ASSERT_EQ(random.reasoning, whole.reasoning);
      ASSERT_EQ(random.content, whole.content);
    }
  }
}

TEST(ReasoningSplitter, CountsTheTokensOfTheThinkBlock) {
  ReasoningSplitter s;
  for (const char* token : {"<think>", "\n", "Hmm", "\n", "</think>", "\n\n", "Yes", "."}) s.feed(token);
  EXPECT_EQ(s.reasoning_tokens(), 5);  // <think> through </think>
  ReasoningSplitter open(true);
  for (const char* token : {"Hmm", "", "</think>", "Yes"}) open.feed(token);  // "": half a character
  EXPECT_EQ(open.reasoning_tokens(), 3);
  ReasoningSplitter cut;
  for (const char* token : {"<think>", "a", "b"}) cut.feed(token);
  EXPECT_EQ(cut.reasoning_tokens(), 3);
  ReasoningSplitter none;
  for (const char* token : {"Hi", " there"}) none.feed(token);
  EXPECT_EQ(none.reasoning_tokens(), 0);
}

TEST(ReasoningTokens, OnlyTokenizersWithThinkTagsGetASplitter) {
  const Tokenizer qwen3 = Tokenizer::load(test::qwen3_tokenizer_dir());
  const auto tags = find_think_tokens(qwen3);
  ASSERT_TRUE(tags.has_value());
  EXPECT_EQ(tags->open, 151667);
  EXPECT_EQ(tags->close, 151668);
  const Tokenizer qwen25 = Tokenizer::load(test::demo_model_dir());
  EXPECT_FALSE(find_think_tokens(qwen25).has_value());
  EXPECT_FALSE(reasoning_splitter_for(qwen25, std::vector<int32_t>{9707}).has_value());

  const std::vector<int32_t> open_prompt = {151644, 77091, 198, 151667, 198};
  EXPECT_TRUE(ends_in_open_think(open_prompt, *tags));
  EXPECT_TRUE(reasoning_splitter_for(qwen3, open_prompt)->found_reasoning());
  EXPECT_FALSE(ends_in_open_think(std::vector<int32_t>{151667, 271, 151668, 271}, *tags));
  EXPECT_FALSE(ends_in_open_think(std::vector<int32_t>{151644, 77091, 198}, *tags));
  EXPECT_FALSE(reasoning_splitter_for(qwen3, std::vector<int32_t>{198})->found_reasoning());
}

TEST(ChatPrompt, TemplateVariablesReachTheQwen3Template) {
  const std::string dir = test::qwen3_tokenizer_dir();
  const ChatTemplate tmpl = ChatTemplate::from_checkpoint(dir);
  const Tokenizer tok = Tokenizer::load(dir);
  const auto messages = single_turn("Hi");
  const ChatPrompt thinking = encode_chat(tmpl, tok, messages);
  EXPECT_TRUE(thinking.text.ends_with("<|im_start|>assistant\n")) << thinking.text;
  const ChatPrompt no_think = encode_chat(tmpl, tok, messages, nullptr, true, {{"enable_thinking", false}});
  EXPECT_EQ(no_think.text, thinking.text + "<think>\n\n</think>\n\n");
  ASSERT_GE(no_think.ids.size(), 4u);
  EXPECT_EQ(std::vector<int32_t>(no_think.ids.end() - 4, no_think.ids.end()), (std::vector<int32_t>{151667, 271, 151668, 271}));
  EXPECT_FALSE(ends_in_open_think(no_think.ids, *find_think_tokens(tok)));
}

TEST(ChatPrompt, TemplateVariablesAreCheckedAndMerged) {
  EXPECT_NO_THROW(check_template_vars({{"enable_thinking", false}}, "--chat-template-kwargs"));
  EXPECT_NO_THROW(check_template_vars(jinja::OrderedJson::object(), "--chat-template-kwargs"));
  std::string e = test::thrown_error([] { check_template_vars(jinja::OrderedJson::array(), "--chat-template-kwargs"); });
  EXPECT_NE(e.find("--chat-template-kwargs"), std::string::npos) << e;
  EXPECT_NE(e.find("object"), std::string::npos) << e;
  e = test::thrown_error([] { check_template_vars({{"messages", 1}}, "chat_template_kwargs"); });
  EXPECT_NE(e.find("chat_template_kwargs"), std::string::npos) << e;
  EXPECT_NE(e.find("\"messages\""), std::string::npos) << e;

  const jinja::OrderedJson merged =
      merge_template_vars({{"enable_thinking", false}, {"a", 1}}, {{"enable_thinking", true}, {"b", 2}});
  EXPECT_EQ(merged, jinja::OrderedJson({{"enable_thinking", true}, {"a", 1}, {"b", 2}}));
}

}  // namespace
}  // namespace glass
