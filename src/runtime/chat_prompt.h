// A conversation as prompt ids: the checkpoint's chat template renders the messages,
// and the text is tokenized as transformers' apply_chat_template(tokenize=True) does
// (special tokens recognised, no BOS or other special tokens added).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace glass {

struct ChatPrompt {
  std::string text;
  std::vector<int32_t> ids;
};

// `messages`: a JSON array of {"role", "content", ...}; `tools`: a JSON array or null;
// `template_vars`: extra template variables, as apply_chat_template's keyword arguments
// (e.g. {"enable_thinking": false} for Qwen3).
ChatPrompt encode_chat(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                       const jinja::OrderedJson& messages, const jinja::OrderedJson& tools = nullptr,
                       bool add_generation_prompt = true,
                       const jinja::OrderedJson& template_vars = jinja::OrderedJson::object());

// Throws glass::Error naming `source` (a flag or a request field) unless `vars` can be
// extra template variables: a JSON object that does not set what the caller passes
// itself (messages, tools, add_generation_prompt).
void check_template_vars(const jinja::OrderedJson& vars, const std::string& source);

// `overrides` over `defaults`, variable by variable (both objects): a request's
// chat_template_kwargs over the server's, as vLLM merges them.
jinja::OrderedJson merge_template_vars(const jinja::OrderedJson& defaults, const jinja::OrderedJson& overrides);

// [{"role": "system", ...} when `system` is not empty, {"role": "user", "content": user}]
jinja::OrderedJson single_turn(const std::string& user, const std::string& system = "");

}  // namespace glass
