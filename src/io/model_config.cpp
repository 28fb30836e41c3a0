#include "io/model_config.h"

#include "base/error.h"

namespace glass {

int64_t ModelConfig::parameter_count() const {
  const int64_t h = hidden_size;
  int64_t per_layer = 0;
  per_layer += h;                                   // input_layernorm
  per_layer += h * q_dim() + q_dim();               // q_proj + bias
  per_layer += 2 * (h * kv_dim() + kv_dim());       // k_proj, v_proj + biases
  per_layer += q_dim() * h;                         // o_proj (no bias)
  per_layer += h;                                   // post_attention_layernorm
  per_layer += 3 * h * intermediate_size;           // gate, up, down
  int64_t total = vocab_size * h + num_layers * per_layer + h;
  if (!tie_word_embeddings) total += vocab_size * h;
  return total;
}

Json ModelConfig::to_json() const {
  Json j{{"architectures", {architecture}},
              {"model_type", "qwen2"},
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
  if (head_dim != hidden_size / num_heads) j["head_dim"] = head_dim;
  return j;
}

namespace {

int64_t positive(const Json& j, const char* field, const std::string& source) {
  int64_t v = json_int(j, field, source);
  if (v <= 0) fail(source, ": field \"", field, "\" must be a positive integer, got ", v);
  return v;
}

}  // namespace

ModelConfig parse_model_config(const Json& j, const std::string& source) {
  if (!j.is_object()) fail(source, ": must be a JSON object");
  ModelConfig c;

  auto arch = j.find("architectures");
  if (arch == j.end() || !arch->is_array() || arch->empty() || !(*arch)[0].is_string())
    fail(source, ": field \"architectures\" must be a list naming the model class, e.g. [\"Qwen2ForCausalLM\"]");
  c.architecture = (*arch)[0].get<std::string>();
  if (c.architecture != "Qwen2ForCausalLM")
    refuse(source, ": architecture \"", c.architecture,
         "\" is not supported (glass runs Qwen2ForCausalLM: Qwen2 and Qwen2.5 checkpoints)");
  if (auto mt = json_string_opt(j, "model_type", source); mt && *mt != "qwen2")
    refuse(source, ": field \"model_type\" is \"", *mt, "\"; glass supports \"qwen2\"");

  c.hidden_size = positive(j, "hidden_size", source);
  c.num_layers = positive(j, "num_hidden_layers", source);
  c.num_heads = positive(j, "num_attention_heads", source);
  c.num_kv_heads = json_int_opt(j, "num_key_value_heads", source).value_or(c.num_heads);
  if (c.num_kv_heads <= 0) fail(source, ": field \"num_key_value_heads\" must be a positive integer");
  c.intermediate_size = positive(j, "intermediate_size", source);
  c.vocab_size = positive(j, "vocab_size", source);
  c.max_position_embeddings = json_int_opt(j, "max_position_embeddings", source).value_or(32768);
  if (c.max_position_embeddings <= 0)
    fail(source, ": field \"max_position_embeddings\" must be a positive integer");
  c.rms_norm_eps = json_number_opt(j, "rms_norm_eps", source).value_or(1e-6);
  if (!(c.rms_norm_eps > 0)) fail(source, ": field \"rms_norm_eps\" must be positive");
  c.rope_theta = json_number_opt(j, "rope_theta", source).value_or(10000.0);
  if (!(c.rope_theta > 0)) fail(source, ": field \"rope_theta\" must be positive");
  c.tie_word_embeddings = json_bool_or(j, "tie_word_embeddings", false, source);
  c.torch_dtype = json_string_opt(j, "torch_dtype", source).value_or("");

  if (c.num_heads % c.num_kv_heads != 0)
    fail(source, ": num_attention_heads (", c.num_heads, ") must be a multiple of num_key_value_heads (",
         c.num_kv_heads, ")");
  if (auto hd = json_int_opt(j, "head_dim", source)) {
    if (*hd <= 0) fail(source, ": field \"head_dim\" must be a positive integer");
    c.head_dim = *hd;
  } else {
    if (c.hidden_size % c.num_heads != 0)
      fail(source, ": hidden_size (", c.hidden_size, ") must be divisible by num_attention_heads (",
           c.num_heads, ")");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) fail(source, ": head_dim (", c.head_dim, ") must be even for rotary embeddings");

  if (auto act = json_string_opt(j, "hidden_act", source); act && *act != "silu")
    refuse(source, ": hidden_act \"", *act, "\" is not supported (Qwen2 uses \"silu\")");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    refuse(source, ": field \"rope_scaling\" is set (", j["rope_scaling"].dump(),
         "); scaled rotary embeddings (YaRN, dynamic NTK, ...) are not supported");
  if (json_bool_or(j, "use_sliding_window", false, source))
    refuse(source, ": field \"use_sliding_window\" is true; sliding-window attention is not supported");
  if (j.contains("quantization_config") && !j["quantization_config"].is_null())
    refuse(source, ": field \"quantization_config\" is set; pre-quantized checkpoints (GPTQ, AWQ, ...) are "
                 "not supported (use --weight-type to quantize at load)");
  return c;
}

ModelConfig load_model_config(const std::string& path) { return parse_model_config(read_json_file(path), path); }

}  // namespace glass
