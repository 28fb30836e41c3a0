// Chat templates: the input is a template's text, parsed (lexer, parser) as
// ChatTemplate::from_text does for a checkpoint's template, then rendered with a fixed
// small conversation (system, user, an assistant tool call, a tool result), one tool and
// the special tokens, as `glass chat-template` and the server render it.
#include <cctype>
#include <ctime>
#include <string_view>

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

// TEMPORARY, known findings being fixed on the `templates` branch (render budgets, format
// widths; remove this and its call when it is merged): a format width or precision of 10
// digits or more overflows int while parsed ("%.2147483648f", "{:>9999999999}"), and
// counts that large blow up truncate, slice and the padding filters and methods. Templates
// with such a digit run after '%', '.' or a field's ':' (a format spec, with up to 4 flag
// or fill characters between), or as the first argument of one of those, are skipped.
bool known_template_blowup(const std::string& t) {
  static constexpr std::string_view kCalls[] = {"truncate", "slice", "center", "indent", "ljust",
                                                "rjust",    "zfill", "expandtabs", "wordwrap"};
  for (size_t i = 0; i < t.size();) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < t.size() && std::isdigit(static_cast<unsigned char>(t[end]))) ++end;
    if (end - i >= 10) {
      size_t j = i;
      for (int skipped = 0; j > 0 && skipped < 4 && std::string_view("-+#<>=^*,_").find(t[j - 1]) != std::string_view::npos;
           ++skipped)
        --j;
      if (j > 0 && (t[j - 1] == '%' || t[j - 1] == '.')) return true;
      if (j > 0 && t[j - 1] == ':') {  // "{:", "{0:", "{name:": a str.format field, not a slice
        size_t k = j - 1;
        while (k > 0 && (std::isalnum(static_cast<unsigned char>(t[k - 1])) || t[k - 1] == '_')) --k;
        if (k > 0 && t[k - 1] == '{') return true;
      }
      if (j > 0 && t[j - 1] == '(') {
        size_t k = j - 1;
        while (k > 0 && (std::isalnum(static_cast<unsigned char>(t[k - 1])) || t[k - 1] == '_')) --k;
        const std::string_view name(t.data() + k, j - 1 - k);
        for (std::string_view call : kCalls)
          if (name == call) return true;
      }
    }
    i = end;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glass;
  const std::string text(fuzz::as_text(data, size));
  if (known_template_blowup(text)) return 0;  // TEMPORARY, see above
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
