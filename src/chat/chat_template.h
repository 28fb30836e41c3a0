// A checkpoint's chat template: turns messages (and tools) into the prompt text the model
// was trained on, as transformers' apply_chat_template(tokenize=False) does.
//
// Tokenize the result with special tokens recognised (<|im_start|> is one token) and
// without adding a BOS token: transformers tokenizes it with add_special_tokens=False,
// since the template writes any BOS itself.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_json.h"
#include "chat/jinja_template.h"

namespace glass {

// The special tokens transformers passes to every chat template (bos_token, eos_token,
// unk_token, pad_token, ... and additional_special_tokens), only those that are set.
struct ChatSpecialTokens {
  std::vector<std::pair<std::string, std::string>> tokens;  // e.g. {"eos_token", "<|im_end|>"}
  std::vector<std::string> additional;                      // additional_special_tokens

  // The value of `name` ("bos_token"...), if set.
  std::optional<std::string> get(const std::string& name) const;
};

class ChatTemplate {
 public:
  // From a checkpoint (or tokenizer) folder. As in transformers, `chat_template.jinja`
  // there takes priority; otherwise tokenizer_config.json's "chat_template": a string, or
  // a list of {"name", "template"} of which `template_name` (default "default") is used;
  // otherwise chat_template.json's. Special tokens come from tokenizer_config.json, as
  // strings or {"content": ...} objects; null ones are left out.
  static ChatTemplate from_checkpoint(const std::string& dir, const std::string& template_name = "");

  // From template text; `name` appears in error messages.
  static ChatTemplate from_text(const std::string& text, const std::string& name, ChatSpecialTokens tokens = {});

  // Renders `messages` (a JSON array of {"role", "content", ...}; tool calls and tool
  // results as JSON) with `tools` (a JSON array, or null for none). `extra_vars` (a JSON
  // object) adds template variables such as enable_thinking; it may override the special
  // tokens and `documents` but not messages, tools or add_generation_prompt.
  std::string render(const jinja::OrderedJson& messages, const jinja::OrderedJson& tools,
                     bool add_generation_prompt,
                     const jinja::OrderedJson& extra_vars = jinja::OrderedJson::object(),
                     const jinja::RenderOptions& options = {}) const;

  const jinja::Template& jinja_template() const { return template_; }
  const ChatSpecialTokens& special_tokens() const { return tokens_; }
  // Where the template came from, e.g. ".../tokenizer_config.json".
  const std::string& origin() const { return template_.name(); }

 private:
  ChatTemplate(jinja::Template t, ChatSpecialTokens tokens) : template_(std::move(t)), tokens_(std::move(tokens)) {}

  jinja::Template template_;
  ChatSpecialTokens tokens_;
};

}  // namespace glass
