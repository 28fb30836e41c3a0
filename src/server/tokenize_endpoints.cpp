#include "server/tokenize_endpoints.h"

#include <limits>
#include <optional>
#include <vector>

#include "runtime/chat_prompt.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/request_fields.h"
#include "tokenizer/utf8.h"

namespace glass::server {

namespace {

using OJson = nlohmann::ordered_json;

// A string field, or nullopt when absent.
std::optional<std::string> string_field(const OJson& body, const char* name) {
  const OJson* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) throw wrong_type(name, "a string", *v);
  return v->get<std::string>();
}

// llama.cpp's add_special or vLLM's add_special_tokens (the same switch), else `fallback`.
bool add_special_field(const OJson& body, bool fallback) {
  const std::optional<bool> llama = bool_field(body, "add_special");
  const std::optional<bool> vllm = bool_field(body, "add_special_tokens");
  if (llama && vllm && *llama != *vllm)
    throw invalid_parameter("add_special_tokens", "'add_special' and 'add_special_tokens' are the same switch; they disagree");
  return llama.value_or(vllm.value_or(fallback));
}

OJson piece_json(std::string_view bytes) {
  if (utf8::is_valid(bytes)) return std::string(bytes);
  OJson out = OJson::array();
  for (char c : bytes) out.push_back(static_cast<unsigned char>(c));
  return out;
}

}  // namespace

void check_model(const OJson& body, const ServedModel& model) {
  const OJson* name = field(body, "model");
  if (name == nullptr) return;
  if (!name->is_string()) throw wrong_type("model", "a string", *name);
  if (name->get<std::string>() != model.id)
    throw not_found(str_cat("The model '", name->get<std::string>(), "' does not exist; this server serves '", model.id, "'"),
                    "model", "model_not_found");
}

OJson tokenize_response(const std::string& text, const ServedModel& model, int64_t max_model_len) {
  const OJson body = parse_request_object(text);
  check_model(body, model);
  std::vector<const char*> given;
  for (const char* name : {"content", "prompt", "messages"})
    if (field(body, name) != nullptr) given.push_back(name);
  if (given.empty())
    throw invalid_parameter("content", "give the text as 'content' (or 'prompt'), or a conversation as 'messages'",
                            "missing_required_parameter");
  if (given.size() > 1)
    throw invalid_parameter(given[1], str_cat("give one of 'content', 'prompt' and 'messages'; this request has '", given[0],
                                              "' and '", given[1], "'"));
  const std::string input = given[0];
  const bool parse_special = bool_field(body, "parse_special").value_or(true);
  const bool with_pieces = bool_field(body, "with_pieces").value_or(false);

  std::vector<int32_t> ids;
  if (input == "messages") {
    if (model.chat_template == nullptr)
      throw invalid_parameter("messages", "this checkpoint has no chat template; give the text as 'prompt' instead");
    ChatInput chat = parse_chat_input(body);
    const bool add_generation_prompt = bool_field(body, "add_generation_prompt").value_or(true);
    if (bool_field(body, "continue_final_message").value_or(false))
      throw invalid_parameter("continue_final_message", "'continue_final_message' is not supported", "unsupported_value");
    const bool add_special = add_special_field(body, false);
    ChatPrompt prompt;
    try {
      prompt = encode_chat(*model.chat_template, *model.tokenizer, chat.messages, chat.tools, add_generation_prompt,
                           merge_template_vars(model.chat_template_kwargs, chat.chat_template_kwargs));
    } catch (const ApiError&) {
      throw;
    } catch (const Error& e) {
      throw invalid_parameter("messages", str_cat("the chat template refused the messages: ", e.what()));
    }
    // encode_chat tokenizes as apply_chat_template does: special tokens recognised, none added.
    ids = add_special ? model.tokenizer->encode(prompt.text, {.parse_special = true, .add_special_tokens = true})
                      : std::move(prompt.ids);
  } else {
    const std::string content = *string_field(body, input.c_str());
    // llama.cpp adds no special tokens unless asked; vLLM adds them unless asked not to.
    const bool add_special = add_special_field(body, input == "prompt");
    ids = model.tokenizer->encode(content, {.parse_special = parse_special, .add_special_tokens = add_special});
  }

  OJson tokens = OJson::array();
  for (int32_t id : ids)
    tokens.push_back(with_pieces ? OJson{{"id", id}, {"piece", piece_json(model.tokenizer->token_bytes(id))}} : OJson(id));
  return {{"tokens", std::move(tokens)}, {"count", ids.size()}, {"max_model_len", max_model_len}};
}

std::vector<int32_t> token_ids_field(const OJson& body, const char* name, const Tokenizer& tokenizer) {
  const OJson* tokens = field(body, name);
  if (tokens == nullptr)
    throw invalid_parameter(name, str_cat("'", name, "' (an array of token ids) is required"), "missing_required_parameter");
  if (!tokens->is_array()) throw wrong_type(name, "an array of token ids", *tokens);
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) ids.push_back(token_id_value((*tokens)[i], str_cat(name, "[", i, "]"), tokenizer));
  return ids;
}

int32_t token_id_value(const OJson& id, const std::string& param, const Tokenizer& tokenizer) {
  if (!id.is_number_integer()) throw wrong_type(param, "a token id (an integer)", id);
  const bool fits = id.is_number_unsigned() ? id.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                                            : id.get<int64_t>() >= 0 && id.get<int64_t>() <= std::numeric_limits<int32_t>::max();
  if (!fits || !tokenizer.has_token(static_cast<int32_t>(id.get<int64_t>())))
    throw invalid_parameter(param.substr(0, param.find('[')), str_cat("'", param, "' = ", id.dump(),
                                                                      " is not a token id of this model's vocabulary (",
                                                                      tokenizer.vocab_size(), " ids)"));
  return static_cast<int32_t>(id.get<int64_t>());
}

OJson detokenize_response(const std::string& text, const ServedModel& model) {
  const OJson body = parse_request_object(text);
  check_model(body, model);
  const std::string decoded = model.tokenizer->decode(token_ids_field(body, "tokens", *model.tokenizer));
  return {{"content", decoded}, {"prompt", decoded}};
}

}  // namespace glass::server
