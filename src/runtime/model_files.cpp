#include "runtime/model_files.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/json_fields.h"
#include "io/checkpoint.h"
#include "io/gguf.h"

namespace glass {

namespace {

// The id a tokenizer.ggml.*_token_id key holds, if the key is present; past the tokens is an error.
std::optional<uint32_t> token_id_of(const GgufMetadata& m, const GgufArray& tokens, const char* key) {
  const std::optional<uint32_t> id = m.find_u32(key);
  if (id && *id >= tokens.size())
    fail(m.at(key).where(), " is ", *id, ", past the ", tokens.size(), " tokens of tokenizer.ggml.tokens");
  return id;
}

// The text of the token such a key names.
std::optional<std::string> token_named_by(const GgufMetadata& m, const GgufArray& tokens, const char* key) {
  const std::optional<uint32_t> id = token_id_of(m, tokens, key);
  if (!id) return std::nullopt;
  return std::string(tokens.string(*id));
}

GgmlVocabulary ggml_vocabulary_of(const GgufMetadata& m) {
  GgmlVocabulary v;
  v.model = m.string("tokenizer.ggml.model");
  v.pre = m.find_string("tokenizer.ggml.pre").value_or("default");
  const GgufArray tokens = m.array("tokenizer.ggml.tokens");
  v.tokens.reserve(tokens.size());
  for (std::string_view t : tokens.strings()) v.tokens.push_back(t);
  if (auto types = m.find_array("tokenizer.ggml.token_type")) v.token_types = types->to_vector<int32_t>();
  if (auto merges = m.find_array("tokenizer.ggml.merges")) {
    v.merges.reserve(merges->size());
    for (std::string_view s : merges->strings()) v.merges.push_back(s);
  }
  v.add_bos = m.find_bool("tokenizer.ggml.add_bos_token").value_or(false);
  if (auto bos = m.find_u32("tokenizer.ggml.bos_token_id"); bos && *bos <= static_cast<uint32_t>(INT32_MAX))
    v.bos_id = static_cast<int32_t>(*bos);
  return v;
}

// llama.cpp ends generation at these control tokens besides the eos id (llama-vocab.cpp's
// end-of-generation set, the entries the Qwen family uses); so do Qwen's
// generation_config.json files (Qwen2.5-Instruct: <|im_end|> and <|endoftext|>).
constexpr std::string_view kEndOfTurnTokens[] = {"<|im_end|>", "<|endoftext|>"};

GenerationDefaults gguf_generation_defaults(const std::string& path) {
  const GgufSet set(path);
  const GgufMetadata& m = set.metadata();
  GenerationDefaults d;
  d.source = m.path();
  SamplingParams& p = d.params;

  const GgufArray tokens = m.array("tokenizer.ggml.tokens");
  std::vector<int32_t> types;
  if (auto a = m.find_array("tokenizer.ggml.token_type")) types = a->to_vector<int32_t>();
  if (auto eos = token_id_of(m, tokens, "tokenizer.ggml.eos_token_id")) p.eos_token_ids.push_back(static_cast<int32_t>(*eos));
  int32_t id = 0;
  for (std::string_view t : tokens.strings()) {
    const bool control = id < static_cast<int32_t>(types.size()) && types[id] == static_cast<int32_t>(GgmlTokenType::kControl);
    if (control && std::find(std::begin(kEndOfTurnTokens), std::end(kEndOfTurnTokens), t) != std::end(kEndOfTurnTokens) &&
        std::find(p.eos_token_ids.begin(), p.eos_token_ids.end(), id) == p.eos_token_ids.end())
      p.eos_token_ids.push_back(id);
    ++id;
  }

  const auto number = [&](const char* key) -> std::optional<double> {
    const std::optional<double> v = m.find_f64(key);
    if (v && !std::isfinite(*v)) fail(m.at(key).where(), " must be a finite number");
    return v;
  };
  const std::optional<double> temp = number("general.sampling.temp");
  const std::optional<double> top_p = number("general.sampling.top_p");
  const std::optional<double> min_p = number("general.sampling.min_p");
  const std::optional<double> penalty = number("general.sampling.penalty_repeat");
  const std::optional<int32_t> top_k = m.find_i32("general.sampling.top_k");
  if (temp) p.temperature = *temp;
  if (top_p) p.top_p = *top_p;
  if (min_p) p.min_p = *min_p;
  if (penalty) p.repetition_penalty = *penalty;
  if (top_k) {
    if (*top_k < 0) fail(m.at("general.sampling.top_k").where(), " must be 0 or more, got ", *top_k);
    p.top_k = *top_k;
  }
  const bool any = temp || top_p || min_p || penalty || top_k;
  // GGUF has no do_sample: a file that states sampling parameters means them to be used.
  p.do_sample = any && !(temp && *temp == 0);
  if (!any)
    d.note = str_cat(m.path(), " states no sampling defaults (general.sampling.*): decoding greedily, as transformers "
                     "does without a generation_config.json; --temperature with --sample, --top-k, --top-p sample");
  std::vector<std::string> ignored;
  for (const char* key : {"general.sampling.sequence", "general.sampling.penalty_last_n", "general.sampling.xtc_probability",
                          "general.sampling.xtc_threshold", "general.sampling.mirostat"})
    if (m.contains(key)) ignored.push_back(key);
  if (!ignored.empty()) {
    std::string list;
    for (const auto& k : ignored) list += (list.empty() ? "" : ", ") + k;
    d.note += str_cat(d.note.empty() ? "" : "; ", m.path(), ": ", list, " not applied (glass has no such sampler setting)");
  }
  p.validate(m.path() + " (general.sampling.*)");
  return d;
}

}  // namespace

bool model_has_tokenizer(const std::string& model_path) {
  if (is_gguf_path(model_path)) return true;  // loading it says what is missing
  return path_exists(model_path + "/tokenizer.json") || path_exists(model_path + "/vocab.json");
}

Tokenizer load_model_tokenizer(const std::string& model_path) {
  if (!is_gguf_path(model_path)) return Tokenizer::load(model_path);
  const GgufSet set(model_path);
  return Tokenizer::from_ggml_vocabulary(ggml_vocabulary_of(set.metadata()), set.path());
}

ChatTemplate load_model_chat_template(const std::string& model_path, const std::string& template_name) {
  if (!is_gguf_path(model_path)) return ChatTemplate::from_checkpoint(model_path, template_name);
  const GgufSet set(model_path);
  const GgufMetadata& m = set.metadata();
  const std::string key = template_name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + template_name;
  const std::optional<std::string_view> text = m.find_string(key);
  if (!text) {
    std::string known;
    if (auto names = m.find_array("tokenizer.chat_templates"))
      for (std::string_view n : names->strings()) known += str_cat(known.empty() ? "" : ", ", text_excerpt(n));
    if (template_name.empty()) fail(m.path(), ": no chat template (metadata key \"tokenizer.chat_template\")");
    fail(m.path(), ": no chat template named \"", template_name, "\" (metadata key \"", key, "\"",
         known.empty() ? "" : "; it has: " + known, ")");
  }
  ChatSpecialTokens special;
  const GgufArray tokens = m.array("tokenizer.ggml.tokens");
  const std::pair<const char*, const char*> names[] = {{"bos_token", "tokenizer.ggml.bos_token_id"},
                                                       {"eos_token", "tokenizer.ggml.eos_token_id"},
                                                       {"unk_token", "tokenizer.ggml.unknown_token_id"},
                                                       {"pad_token", "tokenizer.ggml.padding_token_id"}};
  for (const auto& [name, id_key] : names)
    if (auto t = token_named_by(m, tokens, id_key)) special.tokens.emplace_back(name, std::move(*t));
  return ChatTemplate::from_text(std::string(*text), str_cat(m.path(), " (", key, ")"), std::move(special));
}

GenerationDefaults load_generation_defaults(const std::string& model_path) {
  if (is_gguf_path(model_path)) return gguf_generation_defaults(model_path);
  GenerationDefaults d;
  d.source = model_path + "/generation_config.json";
  d.params = load_generation_config(d.source);
  if (d.params.eos_token_ids.empty()) {
    const Json config = read_json_file(model_path + "/config.json");
    if (auto eos = config.find("eos_token_id"); eos != config.end()) {
      if (eos->is_number_integer()) d.params.eos_token_ids.push_back(eos->get<int32_t>());
      else if (eos->is_array())
        for (const Json& id : *eos)
          if (id.is_number_integer()) d.params.eos_token_ids.push_back(id.get<int32_t>());
    }
  }
  return d;
}

}  // namespace glass
