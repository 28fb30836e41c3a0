// ChatTemplate: finding a checkpoint's template and special tokens, rendering messages,
// tools and extra variables; and the `glass chat-template` command.
#include <gtest/gtest.h>

#include "base/error.h"
#include "chat/chat_template.h"
#include "support/test_support.h"

namespace glass {
namespace {

using jinja::OrderedJson;
using test::run_glass;
using test::shell_quote;
using test::TempDir;
using test::thrown_error;
using test::write_string;

const char* kTinyTemplate =
    "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

OrderedJson user_says(const std::string& text) {
  return OrderedJson::array({{{"role", "user"}, {"content", text}}});
}

void write_config(const TempDir& dir, const OrderedJson& config) {
  write_string(dir.file("tokenizer_config.json"), config.dump(2));
}

TEST(ChatTemplate, ReadsTemplateAndSpecialTokensFromTokenizerConfig) {
  TempDir dir;
  write_config(dir, {{"chat_template", kTinyTemplate},
                     {"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}, {"lstrip", false}}},
                     {"eos_token", "</s>"},
                     {"unk_token", nullptr},
                     {"pad_token", ""}});
  const ChatTemplate chat = ChatTemplate::from_checkpoint(dir.path());
  EXPECT_EQ(chat.special_tokens().get("bos_token"), "<s>");
  EXPECT_EQ(chat.special_tokens().get("eos_token"), "</s>");
  // Null and empty tokens are not passed at all, as in transformers.
  EXPECT_FALSE(chat.special_tokens().get("unk_token").has_value());
  EXPECT_FALSE(chat.special_tokens().get("pad_token").has_value());
  EXPECT_EQ(chat.render(user_says("Hi"), nullptr, true), "<s><user>Hi</s><assistant>");
  EXPECT_EQ(chat.render(user_says("Hi"), nullptr, false), "<s><user>Hi</s>");
  EXPECT_NE(chat.origin().find("tokenizer_config.json"), std::string::npos);
}

TEST(ChatTemplate, UnsetTokensAreUndefinedNotNone) {
  TempDir dir;
  write_config(dir, {{"chat_template", "[{{ bos_token }}|{{ bos_token is defined }}|{{ documents is none }}]"},
                     {"bos_token", nullptr}});
  EXPECT_EQ(ChatTemplate::from_checkpoint(dir.path()).render(user_says("x"), nullptr, true), "[|False|True]");
}

TEST(ChatTemplate, PicksTheDefaultOfNamedTemplates) {
  TempDir dir;
  write_config(dir, {{"chat_template", OrderedJson::array({{{"name", "default"}, {"template", "default:{{ messages|length }}"}},
                                                           {{"name", "tool_use"}, {"template", "tools:{{ tools|length }}"}}})}});
  EXPECT_EQ(ChatTemplate::from_checkpoint(dir.path()).render(user_says("x"), nullptr, true), "default:1");
  const OrderedJson tools = OrderedJson::array({{{"type", "function"}}});
  EXPECT_EQ(ChatTemplate::from_checkpoint(dir.path(), "tool_use").render(user_says("x"), tools, true), "tools:1");
  const std::string error = thrown_error([&] { ChatTemplate::from_checkpoint(dir.path(), "rag"); });
  EXPECT_NE(error.find("no chat template named \"rag\" (it has: default, tool_use)"), std::string::npos) << error;
}

TEST(ChatTemplate, ChatTemplateJinjaTakesPriority) {
  TempDir dir;
  write_config(dir, {{"chat_template", "from config"}, {"eos_token", "</s>"}});
  write_string(dir.file("chat_template.jinja"), "from file{{ eos_token }}\n");
  const ChatTemplate chat = ChatTemplate::from_checkpoint(dir.path());
  EXPECT_EQ(chat.render(user_says("x"), nullptr, true), "from file</s>");
  EXPECT_NE(chat.origin().find("chat_template.jinja"), std::string::npos);
}

TEST(ChatTemplate, MissingTemplateIsAnError) {
  TempDir dir;
  write_config(dir, {{"eos_token", "</s>"}});
  EXPECT_NE(thrown_error([&] { ChatTemplate::from_checkpoint(dir.path()); }).find("no chat template"),
            std::string::npos);
  TempDir empty;
  EXPECT_NE(thrown_error([&] { ChatTemplate::from_checkpoint(empty.path()); }).find("no tokenizer_config.json"),
            std::string::npos);
  write_config(dir, {{"chat_template", 42}});
  EXPECT_NE(thrown_error([&] { ChatTemplate::from_checkpoint(dir.path()); }).find("must be a string or a list"),
            std::string::npos);
}

TEST(ChatTemplate, TemplateErrorsNameTheFileLineAndColumn) {
  TempDir dir;
  write_config(dir, {{"chat_template", "line 1\n{% for m in messages %}{{ m.content|nosuch }}{% endfor %}"}});
  const std::string error = thrown_error([&] { ChatTemplate::from_checkpoint(dir.path()); });
  EXPECT_NE(error.find("tokenizer_config.json"), std::string::npos) << error;
  EXPECT_NE(error.find("line 2, column 37: no filter named 'nosuch'"), std::string::npos) << error;
}

TEST(ChatTemplate, RendersToolsToolCallsAndExtraVariables) {
  const ChatTemplate chat = ChatTemplate::from_text(
      "{% for t in tools %}{{ t.function.name }};{% endfor %}"
      "{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.arguments|tojson }}{% endfor %}{% endfor %}"
      "{{ enable_thinking }}",
      "test");
  const OrderedJson messages = OrderedJson::parse(
      R"([{"role": "assistant", "content": "", "tool_calls": [{"type": "function",
          "function": {"name": "f", "arguments": {"z": 1, "a": "é"}}}]}])");
  const OrderedJson tools = OrderedJson::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  // Keys keep their order (z before a), and non-ASCII stays as is.
  EXPECT_EQ(chat.render(messages, tools, true, {{"enable_thinking", false}}), "f;{\"z\": 1, \"a\": \"é\"}False");
  EXPECT_NE(thrown_error([&] { chat.render(OrderedJson::object(), nullptr, true); }).find("must be a JSON array"),
            std::string::npos);
  EXPECT_NE(thrown_error([&] { chat.render(messages, "tools", true); }).find("tools must be a JSON array or null"),
            std::string::npos);
  EXPECT_NE(thrown_error([&] { chat.render(messages, nullptr, true, {{"messages", 1}}); }).find("cannot be set"),
            std::string::npos);
}

TEST(ChatTemplate, RealQwenTokenizerConfig) {
  const std::string dir = test::fixtures_root() + "/qwen2.5-tokenizer";
  const ChatTemplate chat = ChatTemplate::from_checkpoint(dir);
  EXPECT_EQ(chat.special_tokens().get("eos_token"), "<|im_end|>");
  EXPECT_EQ(chat.special_tokens().get("pad_token"), "<|endoftext|>");
  EXPECT_FALSE(chat.special_tokens().get("bos_token").has_value());
  EXPECT_EQ(chat.special_tokens().additional.front(), "<|im_start|>");
  EXPECT_EQ(chat.render(user_says("Hello"), nullptr, true),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
}

// ---- glass chat-template ---------------------------------------------------------------

TEST(ChatTemplateCli, RendersStdinWithTheDemoModelsTemplate) {
  const auto r = run_glass("chat-template", R"([{"role": "user", "content": "Hello"}])");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(r.err.find("built-in demo model"), std::string::npos) << r.err;
}

TEST(ChatTemplateCli, FilesToolsVariablesAndRequestBodies) {
  TempDir dir;
  write_config(dir, {{"chat_template",
                      "{{ messages|length }}|{{ tools|length if tools else 'none' }}|{{ add_generation_prompt }}|"
                      "{{ enable_thinking }}"}});
  write_string(dir.file("messages.json"), R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])");
  write_string(dir.file("tools.json"), R"([{"type": "function", "function": {"name": "f"}}])");
  const std::string m = " -m " + shell_quote(dir.path());
  auto r = run_glass("chat-template" + m + " --messages " + shell_quote(dir.file("messages.json")) + " --tools " +
                     shell_quote(dir.file("tools.json")) + " --no-generation-prompt --var enable_thinking=false");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2|1|False|False");
  // An OpenAI-style request body carries its own tools.
  r = run_glass("chat-template" + m, R"({"messages": [{"role": "user", "content": "a"}], "tools": [{}, {}]})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1|2|True|");
}

TEST(ChatTemplateCli, ErrorsAreReported) {
  TempDir dir;
  write_config(dir, {{"chat_template", "{{ raise_exception('no system role allowed') }}"}});
  auto r = run_glass("chat-template -m " + shell_quote(dir.path()), "[]");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("line 1, column 19: no system role allowed"), std::string::npos) << r.err;
  r = run_glass("chat-template -m " + shell_quote(dir.path()), "[not json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stdin: not valid JSON"), std::string::npos) << r.err;
  r = run_glass("chat-template -m " + shell_quote(dir.path()) + " --var oops", "[]");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("expected NAME=JSON"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace glass
