// Chat templates: the input is a template's text, parsed (lexer, parser) as
// ChatTemplate::from_text does for a checkpoint's template, then rendered with a fixed
// small conversation (system, user, an assistant tool call, a tool result), one tool and
// the special tokens, as `glass chat-template` and the server render it.
#include <ctime>

#include "fuzz_support.h"

namespace {

using glass::jinja::OrderedJson;

const OrderedJson& messages() {
  static const OrderedJson m = OrderedJson::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the weather in Paris? <think>"},
    {"role": "assistant", "content": "", "reasoning_content": "Use the tool.",
     "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
    {"role": "assistant", "content": "<think>\nwarm\n</think>\n\nSunny, 21.5 \u00b0C."},
    {"role": "user", "content": ["not", "a", "string"]}
  ])");
  return m;
}

const OrderedJson& tools() {
  static const OrderedJson t = OrderedJson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather by city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                     "required": ["city"]}}}
  ])");
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glass;
  const std::string text(fuzz::as_text(data, size));
  fuzz::run_one([&] {
    ChatSpecialTokens tokens;
    tokens.tokens = {{"bos_token", "<s>"}, {"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}};
    tokens.additional = {"<|im_start|>", "<|im_end|>"};
    const ChatTemplate chat = ChatTemplate::from_text(text, "fuzz", tokens);
    jinja::RenderOptions options;
    options.now = [] {
      std::tm tm{};
      tm.tm_year = 126;
      tm.tm_mon = 0;
      tm.tm_mday = 15;
      return tm;
    };
    (void)chat.render(messages(), tools(), true, OrderedJson{{"enable_thinking", false}}, options);
    (void)chat.render(OrderedJson::array(), nullptr, false, OrderedJson::object(), options);
  });
  return 0;
}
