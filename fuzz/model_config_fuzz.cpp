// config.json: parsed as load_model_config parses the file, then what `glass inspect`
// computes from a config alone (parameter counts, KV-cache sizes, the RoPE table for
// YaRN), and the config glass writes for it (random-model) must read back the same.
#include "base/json_fields.h"
#include "fuzz_support.h"
#include "io/model_config.h"
#include "model/rope.h"

namespace {

using namespace glass;

void check_same(const ModelConfig& a, const ModelConfig& b) {
  GLASS_FUZZ_CHECK(a.architecture == b.architecture, "");
  GLASS_FUZZ_CHECK(a.hidden_size == b.hidden_size, a.hidden_size, " vs ", b.hidden_size);
  GLASS_FUZZ_CHECK(a.num_layers == b.num_layers, "");
  GLASS_FUZZ_CHECK(a.num_heads == b.num_heads, "");
  GLASS_FUZZ_CHECK(a.num_kv_heads == b.num_kv_heads, "");
  GLASS_FUZZ_CHECK(a.head_dim == b.head_dim, a.head_dim, " vs ", b.head_dim);
  GLASS_FUZZ_CHECK(a.intermediate_size == b.intermediate_size, "");
  GLASS_FUZZ_CHECK(a.vocab_size == b.vocab_size, "");
  GLASS_FUZZ_CHECK(a.max_position_embeddings == b.max_position_embeddings, "");
  GLASS_FUZZ_CHECK(a.rms_norm_eps == b.rms_norm_eps, a.rms_norm_eps, " vs ", b.rms_norm_eps);
  GLASS_FUZZ_CHECK(a.rope_theta == b.rope_theta, a.rope_theta, " vs ", b.rope_theta);
  GLASS_FUZZ_CHECK(a.tie_word_embeddings == b.tie_word_embeddings, "");
  GLASS_FUZZ_CHECK(a.attention_bias == b.attention_bias, "");
  GLASS_FUZZ_CHECK(a.qk_norm == b.qk_norm, "");
  GLASS_FUZZ_CHECK(a.num_experts == b.num_experts, "");
  GLASS_FUZZ_CHECK(a.num_experts_per_tok == b.num_experts_per_tok, "");
  GLASS_FUZZ_CHECK(a.moe_intermediate_size == b.moe_intermediate_size, "");
  GLASS_FUZZ_CHECK(a.decoder_sparse_step == b.decoder_sparse_step, "");
  GLASS_FUZZ_CHECK(a.mlp_only_layers == b.mlp_only_layers, "");
  GLASS_FUZZ_CHECK(a.norm_topk_prob == b.norm_topk_prob, "");
  const RopeScaling &r = a.rope_scaling, &s = b.rope_scaling;
  GLASS_FUZZ_CHECK(r.type == s.type, rope_scaling_type_name(r.type), " vs ", rope_scaling_type_name(s.type));
  GLASS_FUZZ_CHECK(r.factor == s.factor, r.factor, " vs ", s.factor);
  if (r.type == RopeScalingType::kYarn) {
    GLASS_FUZZ_CHECK(r.original_max_position_embeddings == s.original_max_position_embeddings, "");
    GLASS_FUZZ_CHECK(r.beta_fast == s.beta_fast && r.beta_slow == s.beta_slow, "");
    GLASS_FUZZ_CHECK(r.truncate == s.truncate, "");
    GLASS_FUZZ_CHECK(r.attention_factor == s.attention_factor, r.attention_factor, " vs ", s.attention_factor);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  fuzz::run_one([&] {
    const ModelConfig c = parse_model_config(parse_json(text, "config.json"), "config.json");
    // glass inspect (text and JSON)
    (void)c.parameter_count();
    (void)c.active_parameter_count();
    (void)c.sparse_layer_count();
    (void)(c.kv_bytes_per_token(2) * c.max_position_embeddings);
    if (c.rope_scaling.type == RopeScalingType::kYarn) (void)RopeTable::from_config(c);
    // glass random-model writes this; loading the checkpoint reads it back.
    const std::string written = c.to_json().dump();
    ModelConfig back;
    try {
      back = parse_model_config(parse_json(written, "written config.json"), "written config.json");
    } catch (const Error& e) {
      fuzz::finding(str_cat("the config glass writes does not load: ", e.what(), "\n", written));
    }
    check_same(c, back);
  });
  return 0;
}
