#include "io/gguf_model.h"

#include <cmath>

#include "base/error.h"

namespace glass {

namespace {

struct GgufArchitecture {
  const char* name;        // general.architecture
  const char* class_name;  // config.json "architectures"
};
constexpr GgufArchitecture kGgufArchitectures[] = {
    {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}, {"qwen3moe", "Qwen3MoeForCausalLM"}};

// Reads "<arch>.<suffix>" keys; sizes are checked against ConfigLimits here, naming the
// key, so that the message points at the file's own field.
class ArchKeys {
 public:
  ArchKeys(const GgufMetadata& m, std::string_view arch) : m_(m), arch_(arch) {}
  std::string key(std::string_view suffix) const { return str_cat(arch_, ".", suffix); }
  bool has(std::string_view suffix) const { return m_.contains(key(suffix)); }
  int64_t size(std::string_view suffix, int64_t max) const { return check(suffix, m_.u64(key(suffix)), max); }
  std::optional<int64_t> find_size(std::string_view suffix, int64_t max) const {
    if (auto v = m_.find_u64(key(suffix))) return check(suffix, *v, max);
    return std::nullopt;
  }
  double positive(std::string_view suffix, double fallback) const {
    const double v = m_.find_f64(key(suffix)).value_or(fallback);
    if (!(v > 0) || !std::isfinite(v)) fail(m_.path(), ": metadata key \"", key(suffix), "\" must be a positive number, got ", v);
    return v;
  }

 private:
  int64_t check(std::string_view suffix, uint64_t v, int64_t max) const {
    if (v == 0 || v > static_cast<uint64_t>(max))
      fail(m_.path(), ": metadata key \"", key(suffix), "\" must be between 1 and ", max, ", got ", v);
    return static_cast<int64_t>(v);
  }
  const GgufMetadata& m_;
  std::string_view arch_;
};

Json rope_scaling(const GgufMetadata& m, const ArchKeys& k, int64_t context) {
  const std::optional<std::string_view> type = m.find_string(k.key("rope.scaling.type"));
  if (!type || *type == "none") return nullptr;
  const double factor = m.f64(k.key("rope.scaling.factor"));
  if (!(factor > 0) || !std::isfinite(factor))
    fail(m.path(), ": metadata key \"", k.key("rope.scaling.factor"), "\" must be a positive number, got ", factor);
  if (*type == "linear") return Json{{"rope_type", "linear"}, {"factor", factor}};
  if (*type != "yarn")
    refuse(m.path(), ": metadata key \"", k.key("rope.scaling.type"), "\" is \"", text_excerpt(*type),
           "\"; glass implements none, linear and yarn");
  Json s{{"rope_type", "yarn"},
         {"factor", factor},
         {"original_max_position_embeddings",
          k.find_size("rope.scaling.original_context_length", ConfigLimits::kPositions).value_or(context)}};
  if (k.has("rope.scaling.yarn_beta_fast")) s["beta_fast"] = k.positive("rope.scaling.yarn_beta_fast", 32);
  if (k.has("rope.scaling.yarn_beta_slow")) s["beta_slow"] = k.positive("rope.scaling.yarn_beta_slow", 1);
  // llama.cpp multiplies YaRN's own factor (0.1·ln(factor) + 1) by rope.scaling.attn_factor.
  if (k.has("rope.scaling.attn_factor"))
    s["attention_factor"] = k.positive("rope.scaling.attn_factor", 1) * (0.1 * std::log(factor) + 1.0);
  return s;
}

}  // namespace

ModelConfig model_config_from_gguf(const GgufSet& gguf) {
  const GgufMetadata& m = gguf.metadata();
  const std::string& path = m.path();
  const std::string_view arch = m.string("general.architecture");
  const GgufArchitecture* a = nullptr;
  for (const GgufArchitecture& candidate : kGgufArchitectures)
    if (arch == candidate.name) a = &candidate;
  if (a == nullptr)
    refuse(path, ": general.architecture is \"", text_excerpt(arch), "\"; glass runs qwen2, qwen3 and qwen3moe");
  const ArchKeys k(m, arch);

  const GgufTensor* embedding = gguf.find_tensor("token_embd.weight");
  if (embedding == nullptr) fail(path, ": tensor \"token_embd.weight\" is missing (the token embedding)");
  if (embedding->shape.size() != 2) fail(path, ": tensor \"token_embd.weight\" has shape ", embedding->shape_string(), "; expected [vocabulary, embedding]");

  Json j{{"architectures", {a->class_name}},
         {"hidden_act", "silu"},
         {"hidden_size", k.size("embedding_length", ConfigLimits::kHiddenSize)},
         {"num_hidden_layers", k.size("block_count", ConfigLimits::kLayers)},
         {"num_attention_heads", k.size("attention.head_count", ConfigLimits::kHeads)},
         {"num_key_value_heads", k.find_size("attention.head_count_kv", ConfigLimits::kHeads)
                                     .value_or(k.size("attention.head_count", ConfigLimits::kHeads))},
         {"vocab_size", embedding->shape[0]},
         {"max_position_embeddings", k.size("context_length", ConfigLimits::kPositions)},
         {"rms_norm_eps", k.positive("attention.layer_norm_rms_epsilon", 1e-6)},
         {"rope_theta", k.positive("rope.freq_base", 10000.0)},
         {"tie_word_embeddings", gguf.find_tensor("output.weight") == nullptr},
         {"attention_bias", gguf.find_tensor("blk.0.attn_q.bias") != nullptr}};
  const int64_t hidden = j["hidden_size"], heads = j["num_attention_heads"];
  const int64_t head_dim = k.find_size("attention.key_length", ConfigLimits::kHeadDim).value_or(hidden / heads);
  if (auto v = k.find_size("attention.value_length", ConfigLimits::kHeadDim); v && *v != head_dim)
    refuse(path, ": metadata keys \"", k.key("attention.key_length"), "\" (", head_dim, ") and \"",
           k.key("attention.value_length"), "\" (", *v, ") differ; glass runs equal key and value head sizes");
  if (auto rot = k.find_size("rope.dimension_count", ConfigLimits::kHeadDim); rot && *rot != head_dim)
    refuse(path, ": metadata key \"", k.key("rope.dimension_count"), "\" is ", *rot, " but heads have ", head_dim,
           " dimensions; glass rotates whole heads (partial rotary embeddings are not supported)");
  j["head_dim"] = head_dim;
  j["rope_scaling"] = rope_scaling(m, k, j["max_position_embeddings"]);
  if (std::string_view(a->name) == "qwen3moe") {
    const int64_t expert_ff = k.size("expert_feed_forward_length", ConfigLimits::kIntermediateSize);
    j["num_experts"] = k.size("expert_count", ConfigLimits::kExperts);
    j["num_experts_per_tok"] = k.size("expert_used_count", ConfigLimits::kExperts);
    j["moe_intermediate_size"] = expert_ff;
    j["intermediate_size"] = k.find_size("feed_forward_length", ConfigLimits::kIntermediateSize).value_or(expert_ff);
    j["decoder_sparse_step"] = 1;  // llama.cpp's qwen3moe: every layer has experts
    j["norm_topk_prob"] = m.find_bool(k.key("expert_weights_norm")).value_or(true);
  } else {
    j["intermediate_size"] = k.size("feed_forward_length", ConfigLimits::kIntermediateSize);
  }
  ModelConfig c = parse_model_config(j, path + " (its " + std::string(arch) + ".* metadata)");
  c.torch_dtype.clear();
  return c;
}

}  // namespace glass
