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

// `messages`: a JSON array of {"role", "content", ...}; `tools`: a JSON array or null.
ChatPrompt encode_chat(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                       const jinja::OrderedJson& messages, const jinja::OrderedJson& tools = nullptr,
                       bool add_generation_prompt = true);

// [{"role": "system", ...} when `system` is not empty, {"role": "user", "content": user}]
jinja::OrderedJson single_turn(const std::string& user, const std::string& system = "");

}  // namespace glass
