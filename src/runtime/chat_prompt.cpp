#include "runtime/chat_prompt.h"

namespace glass {

ChatPrompt encode_chat(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                       const jinja::OrderedJson& messages, const jinja::OrderedJson& tools,
                       bool add_generation_prompt) {
  ChatPrompt p;
  p.text = chat_template.render(messages, tools, add_generation_prompt);
  EncodeOptions options;
  options.parse_special = true;
  options.add_special_tokens = false;  // the template writes any BOS itself
  p.ids = tokenizer.encode(p.text, options);
  return p;
}

jinja::OrderedJson single_turn(const std::string& user, const std::string& system) {
  jinja::OrderedJson messages = jinja::OrderedJson::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  return messages;
}

}  // namespace glass
