#include "runtime/chat_prompt.h"

#include "base/error.h"

namespace glass {

ChatPrompt encode_chat(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                       const jinja::OrderedJson& messages, const jinja::OrderedJson& tools,
                       bool add_generation_prompt, const jinja::OrderedJson& template_vars) {
  ChatPrompt p;
  p.text = chat_template.render(messages, tools, add_generation_prompt, template_vars);
  EncodeOptions options;
  options.parse_special = true;
  options.add_special_tokens = false;  // the template writes any BOS itself
  p.ids = tokenizer.encode(p.text, options);
  return p;
}

void check_template_vars(const jinja::OrderedJson& vars, const std::string& source) {
  if (!vars.is_object()) fail(source, ": chat template variables must be a JSON object, got ", vars.type_name());
  for (const char* reserved : {"messages", "tools", "add_generation_prompt"})
    if (vars.contains(reserved)) fail(source, ": \"", reserved, "\" cannot be set as a chat template variable (glass passes it itself)");
}

jinja::OrderedJson merge_template_vars(const jinja::OrderedJson& defaults, const jinja::OrderedJson& overrides) {
  jinja::OrderedJson merged = defaults;
  for (const auto& [name, value] : overrides.items()) merged[name] = value;
  return merged;
}

jinja::OrderedJson single_turn(const std::string& user, const std::string& system) {
  jinja::OrderedJson messages = jinja::OrderedJson::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  return messages;
}

}  // namespace glass
