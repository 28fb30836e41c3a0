// POST /tokenize and POST /detokenize, taking the request shapes of both llama.cpp's
// server and vLLM's (at the bare paths, as both serve them):
//   tokenize: text as "content" (llama.cpp; special tokens not added unless
//     "add_special") or "prompt" (vLLM; "add_special_tokens" defaults to true), or
//     "messages" (vLLM: rendered through the chat template with "add_generation_prompt",
//     default true, and "tools" / "chat_template_kwargs"; special tokens not added by
//     default). "parse_special" (default true) recognises special tokens written in text;
//     "with_pieces" (llama.cpp) makes each token {"id", "piece"}, the piece a string, or
//     its bytes when they are not whole UTF-8 characters.
//     Answer: {"tokens": [...], "count": N, "max_model_len": CONTEXT}.
//   detokenize: "tokens" (ids; special tokens are written out).
//     Answer: {"content": TEXT, "prompt": TEXT} (llama.cpp's and vLLM's names).
// A "model" other than the served one is 404, as for completions; wrong types, ids outside
// the vocabulary, or more than one of content / prompt / messages are 400 naming the
// field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/openai_server.h"

namespace glass::server {

nlohmann::ordered_json tokenize_response(const std::string& body, const ServedModel& model, int64_t max_model_len);
nlohmann::ordered_json detokenize_response(const std::string& body, const ServedModel& model);

// A "model" field naming another model than the served one: ApiError 404 (wrong type: 400).
void check_model(const nlohmann::ordered_json& body, const ServedModel& model);

// The array of token ids in `body[name]` (required), each an id of `tokenizer`'s
// vocabulary; ApiError 400 naming the field otherwise.
std::vector<int32_t> token_ids_field(const nlohmann::ordered_json& body, const char* name, const Tokenizer& tokenizer);
// One token id; `param` names it in errors ("tokens[3]", "token").
int32_t token_id_value(const nlohmann::ordered_json& id, const std::string& param, const Tokenizer& tokenizer);

}  // namespace glass::server
