#include "io/model_config.h"

#include <algorithm>
#include <cmath>

#include "base/checked_math.h"
#include "base/error.h"

namespace glass {

namespace {

// What each architecture fixes, as data. Fields that a config.json may set (head_dim,
// attention_bias) start from transformers' defaults for that class.
struct ArchitectureTraits {
  Architecture architecture;
  const char* class_name;
  const char* model_type;
  bool bias_from_config;        // Qwen3: "attention_bias" (default false); Qwen2: always biased
  bool qk_norm;                 // per-head q/k RMSNorm
  bool moe;                     // experts
  int64_t default_head_dim;     // 0: hidden_size / num_attention_heads
};

constexpr ArchitectureTraits kArchitectures[] = {
    {Architecture::Qwen2, "Qwen2ForCausalLM", "qwen2", false, false, false, 0},
    {Architecture::Qwen3, "Qwen3ForCausalLM", "qwen3", true, true, false, 128},
    {Architecture::Qwen3Moe, "Qwen3MoeForCausalLM", "qwen3_moe", true, true, true, 0},
};

const ArchitectureTraits& traits(Architecture a) {
  for (const auto& t : kArchitectures)
    if (t.architecture == a) return t;
  return kArchitectures[0];
}

std::string supported_classes() {
  std::string s;
  for (const auto& t : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(t.class_name);
  return s;
}

void check_size(int64_t v, const char* field, int64_t max, const std::string& source) {
  if (v <= 0) fail(source, ": field \"", field, "\" must be a positive integer, got ", v);
  if (v > max) fail(source, ": field \"", field, "\" must be at most ", max, ", got ", v);
}

// A size in 1..max (ConfigLimits).
int64_t positive(const Json& j, const char* field, int64_t max, const std::string& source) {
  const int64_t v = json_int(j, field, source);
  check_size(v, field, max, source);
  return v;
}

int64_t positive_or(const Json& j, const char* field, int64_t fallback, int64_t max, const std::string& source) {
  const int64_t v = json_int_opt(j, field, source).value_or(fallback);
  check_size(v, field, max, source);
  return v;
}

double finite_positive_or(const Json& j, const char* field, double fallback, const std::string& source) {
  const double v = json_number_opt(j, field, source).value_or(fallback);
  if (!(v > 0) || !std::isfinite(v)) fail(source, ": field \"", field, "\" must be a positive number, got ", v);
  return v;
}

// YaRN's attention scaling (transformers' get_mscale).
double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

// "rope_scaling" (or, in configs written by newer transformers, "rope_parameters", which
// also carries rope_theta). `theta` is updated from rope_parameters.
RopeScaling parse_rope_scaling(const Json& j, const ModelConfig& c, double* theta, const std::string& source) {
  RopeScaling s;
  const Json* scaling = nullptr;
  std::string where;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_object()) fail(source, ": field \"", key, "\" must be an object or null, got ", json_type_name(*it));
    scaling = &*it;
    where = source + ": " + key;
    break;
  }
  if (scaling == nullptr) return s;
  if (auto t = json_number_opt(*scaling, "rope_theta", where)) {
    if (!(*t > 0) || !std::isfinite(*t)) fail(where, ": field \"rope_theta\" must be a positive number");
    *theta = *t;
  }
  // transformers reads "rope_type", falling back to the older "type".
  std::optional<std::string> type = json_string_opt(*scaling, "rope_type", where);
  if (!type) type = json_string_opt(*scaling, "type", where);
  if (!type) fail(where, ": field \"rope_type\" (or \"type\") is missing; expected \"default\", \"linear\" or \"yarn\"");
  if (*type == "default") return s;
  if (*type == "linear") {
    s.type = RopeScalingType::kLinear;
  } else if (*type == "yarn") {
    s.type = RopeScalingType::kYarn;
  } else {
    refuse(where, ": rope_type \"", text_excerpt(*type),
           "\" is not supported (glass implements \"default\", \"linear\" and \"yarn\"; dynamic, llama3, longrope "
           "and mrope are not)");
  }
  auto factor = json_number_opt(*scaling, "factor", where);
  if (!factor) fail(where, ": field \"factor\" is missing; rope_type \"", text_excerpt(*type), "\" needs the scaling factor (e.g. 4.0)");
  if (!(*factor > 0) || !std::isfinite(*factor)) fail(where, ": field \"factor\" must be a positive number, got ", *factor);
  s.factor = *factor;
  if (s.type != RopeScalingType::kYarn) return s;

  s.original_max_position_embeddings = positive_or(*scaling, "original_max_position_embeddings",
                                                   c.max_position_embeddings, ConfigLimits::kPositions, where);
  // transformers: `rope_scaling.get("beta_fast") or 32`, so 0 means the default too.
  const double beta_fast = json_number_opt(*scaling, "beta_fast", where).value_or(0);
  const double beta_slow = json_number_opt(*scaling, "beta_slow", where).value_or(0);
  s.beta_fast = beta_fast != 0 ? beta_fast : 32.0;
  s.beta_slow = beta_slow != 0 ? beta_slow : 1.0;
  if (!(s.beta_fast > 0) || !(s.beta_slow > 0) || !std::isfinite(s.beta_fast) || !std::isfinite(s.beta_slow))
    fail(where, ": fields \"beta_fast\" and \"beta_slow\" must be positive numbers");
  s.truncate = json_bool_or(*scaling, "truncate", true, where);
  if (auto af = json_number_opt(*scaling, "attention_factor", where)) {
    if (!(*af > 0) || !std::isfinite(*af)) fail(where, ": field \"attention_factor\" must be a positive number");
    s.attention_factor = *af;
  } else {
    const double mscale = json_number_opt(*scaling, "mscale", where).value_or(0);
    const double mscale_all_dim = json_number_opt(*scaling, "mscale_all_dim", where).value_or(0);
    s.attention_factor = mscale != 0 && mscale_all_dim != 0
                             ? yarn_mscale(s.factor, mscale) / yarn_mscale(s.factor, mscale_all_dim)
                             : yarn_mscale(s.factor, 1.0);
  }
  return s;
}

}  // namespace

const char* architecture_class_name(Architecture a) { return traits(a).class_name; }
const char* architecture_model_type(Architecture a) { return traits(a).model_type; }

const char* rope_scaling_type_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::kLinear: return "linear";
    case RopeScalingType::kYarn: return "yarn";
    default: return "none";
  }
}

bool ModelConfig::is_sparse_layer(int64_t l) const {
  if (num_experts == 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), l) != mlp_only_layers.end()) return false;
  return (l + 1) % decoder_sparse_step == 0;
}

int64_t ModelConfig::sparse_layer_count() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_layers; ++l) n += is_sparse_layer(l);
  return n;
}

namespace {

// Parameters of one layer's attention block and norms, and of its MLP (dense, or with
// `experts` of which all are counted).
// Checked: a config built in code (not parsed, so not bounded) gets an error, not a
// wrapped count.
constexpr const char* kCount = "parameter count";
int64_t add(int64_t a, int64_t b) { return checked_add(a, b, kCount); }
int64_t mul(int64_t a, int64_t b) { return checked_mul(a, b, kCount); }

int64_t attention_parameters(const ModelConfig& c) {
  const int64_t h = c.hidden_size;
  const int64_t q = mul(c.num_heads, c.head_dim), kv = mul(c.num_kv_heads, c.head_dim);
  int64_t n = mul(2, h);                                  // input and post-attention norms
  n = add(n, add(mul(h, q), mul(2, mul(h, kv))));         // q, k, v
  if (c.attention_bias) n = add(n, add(q, mul(2, kv)));
  n = add(n, mul(q, h));                                  // o_proj (no bias)
  if (c.qk_norm) n = add(n, mul(2, c.head_dim));
  return n;
}

int64_t mlp_parameters(const ModelConfig& c, int64_t l, int64_t experts) {
  const int64_t h = c.hidden_size;
  if (!c.is_sparse_layer(l)) return mul(3, mul(h, c.intermediate_size));
  return add(mul(c.num_experts, h), mul(experts, mul(3, mul(h, c.moe_intermediate_size))));  // router + experts
}

int64_t count_parameters(const ModelConfig& c, bool active_only) {
  const int64_t embedding = mul(c.vocab_size, c.hidden_size);
  int64_t total = add(embedding, c.hidden_size);  // embedding, final norm
  if (!c.tie_word_embeddings) total = add(total, embedding);
  const int64_t attention = attention_parameters(c);
  for (int64_t l = 0; l < c.num_layers; ++l)
    total = add(total, add(attention, mlp_parameters(c, l, active_only ? c.num_experts_per_tok : c.num_experts)));
  return total;
}

}  // namespace

int64_t ModelConfig::parameter_count() const { return count_parameters(*this, false); }

int64_t ModelConfig::kv_bytes_per_token(size_t element_bytes) const {
  const char* what = "KV cache bytes per token";
  return checked_mul(checked_mul(checked_mul(checked_mul(int64_t{2}, num_layers, what), num_kv_heads, what), head_dim, what),
                     static_cast<int64_t>(element_bytes), what);
}
int64_t ModelConfig::active_parameter_count() const { return count_parameters(*this, true); }

Json ModelConfig::to_json() const {
  const ArchitectureTraits& t = traits(architecture);
  Json j{{"architectures", {t.class_name}},
         {"model_type", t.model_type},
         {"hidden_act", "silu"},
         {"hidden_size", hidden_size},
         {"num_hidden_layers", num_layers},
         {"num_attention_heads", num_heads},
         {"num_key_value_heads", num_kv_heads},
         {"intermediate_size", intermediate_size},
         {"vocab_size", vocab_size},
         {"max_position_embeddings", max_position_embeddings},
         {"rms_norm_eps", rms_norm_eps},
         {"rope_theta", rope_theta},
         {"rope_scaling", nullptr},
         {"tie_word_embeddings", tie_word_embeddings},
         {"use_sliding_window", false},
         {"sliding_window", max_position_embeddings},
         {"attention_dropout", 0.0},
         {"bos_token_id", 151643},
         {"eos_token_id", 151643},
         {"torch_dtype", torch_dtype.empty() ? "bfloat16" : torch_dtype}};
  if (t.bias_from_config) j["attention_bias"] = attention_bias;
  // Written unless hidden_size / num_attention_heads gives it exactly: 65 / 4 truncates to
  // 16, but without head_dim that config is refused (found by fuzz_model_config).
  if (t.default_head_dim != 0 || head_dim * num_heads != hidden_size) j["head_dim"] = head_dim;
  if (rope_scaling.type != RopeScalingType::kNone) {
    Json s{{"rope_type", rope_scaling_type_name(rope_scaling.type)}, {"factor", rope_scaling.factor}};
    if (rope_scaling.type == RopeScalingType::kYarn) {
      s["original_max_position_embeddings"] = rope_scaling.original_max_position_embeddings;
      s["beta_fast"] = rope_scaling.beta_fast;
      s["beta_slow"] = rope_scaling.beta_slow;
      s["truncate"] = rope_scaling.truncate;
      s["attention_factor"] = rope_scaling.attention_factor;
    }
    j["rope_scaling"] = s;
  }
  if (t.moe) {
    j["num_experts"] = num_experts;
    j["num_experts_per_tok"] = num_experts_per_tok;
    j["moe_intermediate_size"] = moe_intermediate_size;
    j["decoder_sparse_step"] = decoder_sparse_step;
    j["mlp_only_layers"] = mlp_only_layers;
    j["norm_topk_prob"] = norm_topk_prob;
  }
  return j;
}

ModelConfig parse_model_config(const Json& j, const std::string& source) {
  if (!j.is_object()) fail(source, ": must be a JSON object");
  ModelConfig c;

  auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->empty() || !(*arch)[0].is_string())
    fail(source, ": field \"architectures\" must be a list naming the model class, e.g. [\"Qwen2ForCausalLM\"]");
  const std::string class_name = (*arch)[0].get<std::string>();
  const ArchitectureTraits* t = nullptr;
  for (const auto& a : kArchitectures)
    if (class_name == a.class_name) t = &a;
  if (t == nullptr)
    refuse(source, ": architecture \"", text_excerpt(class_name), "\" is not supported (glass runs ", supported_classes(), ")");
  c.architecture = t->architecture;
  if (auto mt = json_string_opt(j, "model_type", source); mt && *mt != t->model_type)
    fail(source, ": field \"model_type\" is \"", text_excerpt(*mt), "\" but architecture ", t->class_name, " has model_type \"",
         t->model_type, "\"");

  // Every size within ConfigLimits before anything it sizes exists.
  c.hidden_size = positive(j, "hidden_size", ConfigLimits::kHiddenSize, source);
  c.num_layers = positive(j, "num_hidden_layers", ConfigLimits::kLayers, source);
  c.num_heads = positive(j, "num_attention_heads", ConfigLimits::kHeads, source);
  c.num_kv_heads = positive_or(j, "num_key_value_heads", c.num_heads, ConfigLimits::kHeads, source);
  c.intermediate_size = positive(j, "intermediate_size", ConfigLimits::kIntermediateSize, source);
  c.vocab_size = positive(j, "vocab_size", ConfigLimits::kVocabSize, source);
  c.max_position_embeddings = positive_or(j, "max_position_embeddings", 32768, ConfigLimits::kPositions, source);
  c.rms_norm_eps = finite_positive_or(j, "rms_norm_eps", 1e-6, source);
  c.rope_theta = finite_positive_or(j, "rope_theta", 10000.0, source);
  c.tie_word_embeddings = json_bool_or(j, "tie_word_embeddings", false, source);
  c.torch_dtype = json_string_opt(j, "torch_dtype", source).value_or("");
  c.attention_bias = t->bias_from_config ? json_bool_or(j, "attention_bias", false, source) : true;
  c.qk_norm = t->qk_norm;

  if (c.num_heads % c.num_kv_heads != 0)
    fail(source, ": num_attention_heads (", c.num_heads, ") must be a multiple of num_key_value_heads (",
         c.num_kv_heads, ")");
  if (auto hd = json_int_opt(j, "head_dim", source)) {
    check_size(*hd, "head_dim", ConfigLimits::kHeadDim, source);
    c.head_dim = *hd;
  } else if (t->default_head_dim != 0) {
    c.head_dim = t->default_head_dim;
  } else {
    if (c.hidden_size % c.num_heads != 0)
      fail(source, ": hidden_size (", c.hidden_size, ") must be divisible by num_attention_heads (",
           c.num_heads, ")");
    c.head_dim = c.hidden_size / c.num_heads;
    check_size(c.head_dim, "head_dim", ConfigLimits::kHeadDim, source + " (hidden_size / num_attention_heads)");
  }
  if (c.head_dim % 2 != 0) fail(source, ": head_dim (", c.head_dim, ") must be even for rotary embeddings");

  if (t->moe) {
    c.num_experts = positive(j, "num_experts", ConfigLimits::kExperts, source);
    c.num_experts_per_tok = positive(j, "num_experts_per_tok", ConfigLimits::kExperts, source);
    if (c.num_experts_per_tok > c.num_experts)
      fail(source, ": num_experts_per_tok (", c.num_experts_per_tok, ") must not exceed num_experts (",
           c.num_experts, ")");
    c.moe_intermediate_size = positive(j, "moe_intermediate_size", ConfigLimits::kIntermediateSize, source);
    c.decoder_sparse_step = positive_or(j, "decoder_sparse_step", 1, ConfigLimits::kLayers, source);
    c.norm_topk_prob = json_bool_or(j, "norm_topk_prob", false, source);
    if (auto m = j.find("mlp_only_layers"); m != j.end() && !m->is_null()) {
      if (!m->is_array()) fail(source, ": field \"mlp_only_layers\" must be a list of layer indices");
      if (static_cast<int64_t>(m->size()) > c.num_layers)
        fail(source, ": field \"mlp_only_layers\" lists ", m->size(), " layers; the model has ", c.num_layers);
      for (const Json& l : *m) {
        if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() >= c.num_layers)
          fail(source, ": field \"mlp_only_layers\" must hold layer indices 0..", c.num_layers - 1, ", got ",
               l.is_number_integer() ? std::to_string(l.get<int64_t>()) : json_type_name(l));
        c.mlp_only_layers.push_back(l.get<int64_t>());
      }
    }
  }

  c.rope_scaling = parse_rope_scaling(j, c, &c.rope_theta, source);

  if (auto act = json_string_opt(j, "hidden_act", source); act && *act != "silu")
    refuse(source, ": hidden_act \"", text_excerpt(*act), "\" is not supported (the Qwen family uses \"silu\")");
  if (json_bool_or(j, "use_sliding_window", false, source))
    refuse(source, ": field \"use_sliding_window\" is true; sliding-window attention is not supported");
  if (j.contains("quantization_config") && !j["quantization_config"].is_null())
    refuse(source, ": field \"quantization_config\" is set; pre-quantized checkpoints (GPTQ, AWQ, ...) are "
                   "not supported (use --weight-type to quantize at load)");
  return c;
}

ModelConfig load_model_config(const std::string& path) { return parse_model_config(read_json_file(path), path); }

}  // namespace glass
