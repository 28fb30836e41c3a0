#include "runtime/chat_prompt.h"

#include <string>
#include <unordered_map>

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
  // By a hash index of the keys: ordered_json's operator[] scans every key, and a
  // request may send 100,000 variables.
  using Members = jinja::OrderedJson::object_t::Container;
  jinja::OrderedJson merged = defaults.is_object() ? defaults : jinja::OrderedJson::object();
  auto& list = static_cast<Members&>(merged.get_ref<jinja::OrderedJson::object_t&>());
  std::unordered_map<std::string, size_t> position;
  for (size_t i = 0; i < list.size(); ++i) position.try_emplace(list[i].first, i);
  if (!overrides.is_object()) return merged;
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    auto [at, inserted] = position.try_emplace(it.key(), list.size());
    if (inserted) list.emplace_back(it.key(), it.value());
    else list[at->second].second = it.value();
  }
  return merged;
}

jinja::OrderedJson single_turn(const std::string& user, const std::string& system) {
  jinja::OrderedJson messages = jinja::OrderedJson::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  return messages;
}

}  // namespace glass
