#include "chat/chat_template.h"

#include <filesystem>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"

namespace glass {

namespace {

using jinja::OrderedJson;

OrderedJson read_ordered_json(const std::string& path) { return read_ordered_json_file(path); }

// A special token written as "text", {"content": "text", ...} or null.
std::optional<std::string> token_text(const OrderedJson& v, const std::string& source, const char* field) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  fail(source, ": field \"", field, "\" must be a string, an object with \"content\", or null");
}

ChatSpecialTokens special_tokens_of(const OrderedJson& config, const std::string& source) {
  ChatSpecialTokens tokens;
  static constexpr const char* kFields[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                            "pad_token", "cls_token", "mask_token"};
  for (const char* field : kFields) {
    if (!config.contains(field)) continue;
    // transformers passes only tokens that are set and non-empty.
    const auto text = token_text(config[field], source, field);
    if (text && !text->empty()) tokens.tokens.emplace_back(field, *text);
  }
  if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
    for (const auto& t : config["additional_special_tokens"]) {
      const auto text = token_text(t, source, "additional_special_tokens");
      if (text && !text->empty()) tokens.additional.push_back(*text);
    }
  }
  return tokens;
}

std::string pick_named_template(const OrderedJson& list, const std::string& wanted, const std::string& source) {
  const std::string name = wanted.empty() ? "default" : wanted;
  std::vector<std::string> names;
  for (const auto& entry : list) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
        !entry["template"].is_string())
      fail(source, ": each entry of \"chat_template\" must be {\"name\": string, \"template\": string}");
    names.push_back(entry["name"].get<std::string>());
    if (names.back() == name) return entry["template"].get<std::string>();
  }
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  fail(source, ": no chat template named \"", name, "\" (it has: ", known, ")");
}

}  // namespace

std::optional<std::string> ChatSpecialTokens::get(const std::string& name) const {
  for (const auto& [n, v] : tokens)
    if (n == name) return v;
  return std::nullopt;
}

ChatTemplate ChatTemplate::from_checkpoint(const std::string& dir, const std::string& template_name) {
  namespace fs = std::filesystem;
  const std::string config_path = dir + "/tokenizer_config.json";
  const std::string jinja_path = dir + "/chat_template.jinja";
  const std::string processor_path = dir + "/chat_template.json";
  ChatSpecialTokens tokens;
  OrderedJson config;
  const bool have_config = fs::exists(config_path);
  if (have_config) {
    config = read_ordered_json(config_path);
    if (!config.is_object()) fail(config_path, ": must be a JSON object");
    tokens = special_tokens_of(config, config_path);
  }
  if (fs::exists(jinja_path) && template_name.empty())
    return from_text(read_text_file(jinja_path), jinja_path, std::move(tokens));
  if (have_config && config.contains("chat_template") && !config["chat_template"].is_null()) {
    const OrderedJson& t = config["chat_template"];
    if (t.is_string()) {
      if (!template_name.empty())
        fail(config_path, ": has a single chat template, not one named \"", template_name, "\"");
      return from_text(t.get<std::string>(), config_path, std::move(tokens));
    }
    if (t.is_array()) return from_text(pick_named_template(t, template_name, config_path), config_path, std::move(tokens));
    fail(config_path, ": field \"chat_template\" must be a string or a list of named templates");
  }
  if (fs::exists(processor_path)) {
    const OrderedJson processor = read_ordered_json(processor_path);
    if (processor.is_object() && processor.contains("chat_template") && processor["chat_template"].is_string())
      return from_text(processor["chat_template"].get<std::string>(), processor_path, std::move(tokens));
  }
  if (!have_config && !fs::exists(jinja_path)) fail(dir, ": no tokenizer_config.json or chat_template.jinja");
  fail(dir, ": no chat template (neither chat_template.jinja nor a \"chat_template\" in tokenizer_config.json)");
}

ChatTemplate ChatTemplate::from_text(const std::string& text, const std::string& name, ChatSpecialTokens tokens) {
  return ChatTemplate(jinja::Template::parse(text, "chat template (" + name + ")"), std::move(tokens));
}

std::string ChatTemplate::render(const OrderedJson& messages, const OrderedJson& tools, bool add_generation_prompt,
                                 const OrderedJson& extra_vars, const jinja::RenderOptions& options) const {
  if (!messages.is_array()) fail("chat messages must be a JSON array, got ", messages.type_name());
  if (!tools.is_null() && !tools.is_array()) fail("chat tools must be a JSON array or null, got ", tools.type_name());
  if (!extra_vars.is_null() && !extra_vars.is_object())
    fail("chat template variables must be a JSON object, got ", extra_vars.type_name());
  using jinja::Value;
  jinja::Variables vars;
  for (const auto& [name, text] : tokens_.tokens) vars.emplace_back(name, Value::string(text));
  if (!tokens_.additional.empty()) {
    std::vector<Value> extra;
    for (const auto& t : tokens_.additional) extra.push_back(Value::string(t));
    vars.emplace_back("additional_special_tokens", Value::list(std::move(extra)));
  }
  // What transformers' render call passes, in its order.
  vars.emplace_back("messages", jinja::value_from_json(messages));
  vars.emplace_back("tools", jinja::value_from_json(tools));
  vars.emplace_back("documents", Value::none());
  vars.emplace_back("add_generation_prompt", Value::boolean(add_generation_prompt));
  if (extra_vars.is_object()) {
    for (const auto& [name, value] : extra_vars.items()) {
      if (name == "messages" || name == "tools" || name == "add_generation_prompt")
        fail("chat template variable \"", name, "\" cannot be set as an extra variable");
      vars.emplace_back(name, jinja::value_from_json(value));
    }
  }
  return template_.render(vars, options);
}

}  // namespace glass
