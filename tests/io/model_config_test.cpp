#include "io/model_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "qwen_7b_config.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::qwen_7b_config;
using test::thrown_error;

TEST(ModelConfig, ParsesQwen7B) {
  const ModelConfig c = parse_model_config(qwen_7b_config(), "7b.json");
  EXPECT_EQ(c.hidden_size, 3584);
  EXPECT_EQ(c.num_layers, 28);
  EXPECT_EQ(c.num_heads, 28);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.intermediate_size, 18944);
  EXPECT_EQ(c.vocab_size, 152064);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.kv_bytes_per_token(2), 57344);  // 2 * 28 * 4 * 128 * 2
  EXPECT_EQ(c.parameter_count(), 7615616512);  // Qwen2.5-7B's published count
}

TEST(ModelConfig, ParsesQwen05BShapes) {
  Json j = qwen_7b_config();
  j["hidden_size"] = 896;
  j["intermediate_size"] = 4864;
  j["num_hidden_layers"] = 24;
  j["num_attention_heads"] = 14;
  j["num_key_value_heads"] = 2;
  j["vocab_size"] = 151936;
  j["tie_word_embeddings"] = true;
  const ModelConfig c = parse_model_config(j, "05b.json");
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.kv_bytes_per_token(2), 12288);
  EXPECT_EQ(c.parameter_count(), 494032768);  // Qwen2.5-0.5B's published count
}

TEST(ModelConfig, RoundTripsThroughToJson) {
  const ModelConfig c = parse_model_config(qwen_7b_config(), "7b.json");
  const ModelConfig d = parse_model_config(c.to_json(), "written.json");
  EXPECT_EQ(d.hidden_size, c.hidden_size);
  EXPECT_EQ(d.num_kv_heads, c.num_kv_heads);
  EXPECT_EQ(d.head_dim, c.head_dim);
  EXPECT_EQ(d.tie_word_embeddings, c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(d.rope_theta, c.rope_theta);
}

// fuzz_model_config: hidden_size 65 with 4 heads of an explicit head_dim 16 (65 / 4
// truncates to 16) was written without head_dim, and the written config was refused.
TEST(ModelConfig, WritesHeadDimWhenHiddenIsNotHeadsTimesHeadDim) {
  Json j = qwen_7b_config();
  j["architectures"] = {"Qwen3MoeForCausalLM"};
  j["model_type"] = "qwen3_moe";
  j["hidden_size"] = 65;
  j["num_attention_heads"] = 4;
  j["num_key_value_heads"] = 4;
  j["head_dim"] = 16;
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 32;
  const ModelConfig c = parse_model_config(j, "65.json");
  const Json written = c.to_json();
  ASSERT_TRUE(written.contains("head_dim"));
  EXPECT_EQ(parse_model_config(written, "written.json").head_dim, 16);
}

TEST(ModelConfig, DefaultsMissingOptionalFields) {
  Json j = qwen_7b_config();
  j.erase("num_key_value_heads");
  j.erase("rope_theta");
  j.erase("tie_word_embeddings");
  const ModelConfig c = parse_model_config(j, "x.json");
  EXPECT_EQ(c.num_kv_heads, 28);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
}

struct Rejection {
  const char* field;
  Json value;  // null: erase the field
  const char* expect;
  bool refusal = false;  // glass::Unsupported (well-formed, not implemented) rather than a plain Error
};

TEST(ModelConfig, RejectsWhatItDoesNotSupport) {
  const std::vector<Rejection> cases = {
      {"architectures", Json::array({"LlamaForCausalLM"}), "architecture \"LlamaForCausalLM\" is not supported", true},
      {"architectures", nullptr, "\"architectures\""},
      {"model_type", "llama", "field \"model_type\" is \"llama\" but architecture Qwen2ForCausalLM"},
      {"rope_scaling", Json{{"type", "dynamic"}, {"factor", 4.0}}, "rope_type \"dynamic\" is not supported", true},
      {"rope_scaling", Json{{"rope_type", "longrope"}, {"factor", 4.0}}, "rope_scaling: rope_type \"longrope\"", true},
      {"rope_scaling", Json{{"type", "yarn"}}, "rope_scaling: field \"factor\" is missing"},
      {"rope_scaling", Json{{"type", "yarn"}, {"factor", -2.0}}, "field \"factor\" must be a positive number"},
      {"rope_scaling", Json{{"factor", 4.0}}, "field \"rope_type\" (or \"type\") is missing"},
      {"rope_scaling", "yarn", "field \"rope_scaling\" must be an object or null"},
      {"use_sliding_window", true, "sliding-window attention is not supported", true},
      {"hidden_act", "gelu", "hidden_act \"gelu\"", true},
      {"quantization_config", Json{{"quant_method", "awq"}}, "quantization_config", true},
      {"hidden_size", "big", "field \"hidden_size\" must be an integer"},
      {"hidden_size", nullptr, "missing required field \"hidden_size\""},
      {"num_hidden_layers", 0, "\"num_hidden_layers\" must be a positive integer"},
      {"num_key_value_heads", 5, "multiple of num_key_value_heads"},
      {"num_attention_heads", 12, "divisible by num_attention_heads"},
      {"rms_norm_eps", -1.0, "rms_norm_eps"},
      {"tie_word_embeddings", "yes", "\"tie_word_embeddings\" must be true or false"},
  };
  for (const auto& r : cases) {
    Json j = qwen_7b_config();
    if (r.value.is_null()) j.erase(r.field);
    else j[r.field] = r.value;
    const std::string e = thrown_error([&] { parse_model_config(j, "bad/config.json"); });
    EXPECT_NE(e.find("bad/config.json"), std::string::npos) << r.field << ": " << e;
    EXPECT_NE(e.find(r.expect), std::string::npos) << r.field << ": " << e;
    bool refused = false;
    try {
      parse_model_config(j, "bad/config.json");
    } catch (const Unsupported&) {
      refused = true;
    } catch (const Error&) {
    }
    EXPECT_EQ(refused, r.refusal) << r.field << ": " << e;
  }
}

Json qwen3_06b_config() { return test::published_config("Qwen3-0.6B"); }
Json qwen3_8b_config() { return test::published_config("Qwen3-8B"); }
Json qwen3_30b_a3b_config() { return test::published_config("Qwen3-30B-A3B"); }

TEST(ModelConfig, Qwen3_06B) {
  const ModelConfig c = parse_model_config(qwen3_06b_config(), "Qwen3-0.6B/config.json");
  EXPECT_EQ(c.architecture, Architecture::Qwen3);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_dim(), 2048);  // != hidden 1024: o_proj is [1024, 2048]
  EXPECT_FALSE(c.attention_bias);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.num_experts, 0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(c.parameter_count(), 596049920);  // the model card's 0.6B, the tied embedding once
  EXPECT_EQ(c.parameter_count() - c.vocab_size * c.hidden_size, 440467456);  // "0.44B non-embedding"
  EXPECT_EQ(c.kv_bytes_per_token(2), 112 * 1024);
}

TEST(ModelConfig, Qwen3_8B) {
  const ModelConfig c = parse_model_config(qwen3_8b_config(), "Qwen3-8B/config.json");
  EXPECT_EQ(c.q_dim(), c.hidden_size);
  // The model card: 8.2B parameters, 6.95B non-embedding.
  EXPECT_NEAR(static_cast<double>(c.parameter_count()), 8.2e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(c.parameter_count() - 2 * c.vocab_size * c.hidden_size), 6.95e9, 0.005e9);
  EXPECT_EQ(c.kv_bytes_per_token(2), 144 * 1024);
}

TEST(ModelConfig, Qwen3_30B_A3B) {
  const ModelConfig c = parse_model_config(qwen3_30b_a3b_config(), "Qwen3-30B-A3B/config.json");
  EXPECT_EQ(c.architecture, Architecture::Qwen3Moe);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe_intermediate_size, 768);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.sparse_layer_count(), 48);
  // The model card: 30.5B in total, 29.9B non-embedding, 3.3B activated.
  EXPECT_NEAR(static_cast<double>(c.parameter_count()), 30.5e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(c.parameter_count() - 2 * c.vocab_size * c.hidden_size), 29.9e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(c.active_parameter_count()), 3.3e9, 0.1e9);
  EXPECT_EQ(c.kv_bytes_per_token(2), 96 * 1024);
}

TEST(ModelConfig, SparseLayersFollowTheStepAndTheDenseList) {
  Json j = qwen3_30b_a3b_config();
  j["num_hidden_layers"] = 6;
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {3};
  const ModelConfig c = parse_model_config(j, "moe.json");
  std::vector<bool> sparse;
  for (int64_t l = 0; l < 6; ++l) sparse.push_back(c.is_sparse_layer(l));
  EXPECT_EQ(sparse, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(c.sparse_layer_count(), 2);
}

TEST(ModelConfig, Qwen3DefaultsAsTransformersDoes) {
  Json j = qwen3_06b_config();
  j.erase("head_dim");  // Qwen3Config's default is 128, not hidden / heads
  j.erase("attention_bias");
  ModelConfig c = parse_model_config(j, "x.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_FALSE(c.attention_bias);
  j["attention_bias"] = true;
  EXPECT_TRUE(parse_model_config(j, "x.json").attention_bias);
  Json moe = qwen3_30b_a3b_config();
  moe.erase("head_dim");  // Qwen3MoeConfig has none: hidden / heads
  moe.erase("mlp_only_layers");
  moe.erase("decoder_sparse_step");
  c = parse_model_config(moe, "x.json");
  EXPECT_EQ(c.head_dim, 2048 / 32);
  EXPECT_EQ(c.sparse_layer_count(), 48);
}

TEST(ModelConfig, Qwen2IgnoresAttentionBiasAndAlwaysHasIt) {
  Json j = qwen_7b_config();
  EXPECT_TRUE(parse_model_config(j, "x.json").attention_bias);
  EXPECT_FALSE(parse_model_config(j, "x.json").qk_norm);
}

TEST(ModelConfig, YarnAsTheQwen25CardsWriteIt) {
  Json j = qwen_7b_config();
  j["rope_scaling"] = {{"factor", 4.0}, {"original_max_position_embeddings", 32768}, {"type", "yarn"}};
  ModelConfig c = parse_model_config(j, "x.json");
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast, 32);
  EXPECT_DOUBLE_EQ(c.rope_scaling.beta_slow, 1);
  EXPECT_TRUE(c.rope_scaling.truncate);
  EXPECT_NEAR(c.rope_scaling.attention_factor, 0.1 * std::log(4.0) + 1, 1e-15);
  // Round trip, and the explicit fields transformers reads.
  EXPECT_EQ(parse_model_config(c.to_json(), "written.json").rope_scaling.original_max_position_embeddings, 32768);
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 8.0}, {"attention_factor", 1.5}, {"beta_fast", 16},
                       {"truncate", false}};
  c = parse_model_config(j, "x.json");
  EXPECT_DOUBLE_EQ(c.rope_scaling.attention_factor, 1.5);
  EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast, 16);
  EXPECT_FALSE(c.rope_scaling.truncate);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);  // max_position_embeddings
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"mscale", 0.707}, {"mscale_all_dim", 1.0}};
  c = parse_model_config(j, "x.json");
  EXPECT_NEAR(c.rope_scaling.attention_factor, (0.0707 * std::log(4.0) + 1) / (0.1 * std::log(4.0) + 1), 1e-12);
  // rope_type "default" and null are no scaling.
  j["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_EQ(parse_model_config(j, "x.json").rope_scaling.type, RopeScalingType::kNone);
  j["rope_scaling"] = nullptr;
  EXPECT_EQ(parse_model_config(j, "x.json").rope_scaling.type, RopeScalingType::kNone);
}

TEST(ModelConfig, RopeParametersOfNewerTransformers) {
  Json j = qwen3_06b_config();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 5e5}, {"factor", 2.0}};
  const ModelConfig c = parse_model_config(j, "x.json");
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
}

TEST(ModelConfig, RejectsInconsistentFamilyConfigs) {
  struct Case {
    Json config;
    const char* field;
    Json value;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {qwen3_30b_a3b_config(), "num_experts_per_tok", 129, "num_experts_per_tok (129) must not exceed num_experts (128)"},
      {qwen3_30b_a3b_config(), "num_experts", nullptr, "missing required field \"num_experts\""},
      {qwen3_30b_a3b_config(), "moe_intermediate_size", 0, "\"moe_intermediate_size\" must be a positive integer"},
      {qwen3_30b_a3b_config(), "decoder_sparse_step", 0, "\"decoder_sparse_step\" must be a positive integer"},
      {qwen3_30b_a3b_config(), "mlp_only_layers", Json::array({48}), "\"mlp_only_layers\" must hold layer indices 0..47, got 48"},
      {qwen3_30b_a3b_config(), "mlp_only_layers", "all", "\"mlp_only_layers\" must be a list"},
      {qwen3_06b_config(), "head_dim", 63, "head_dim (63) must be even"},
      {qwen3_06b_config(), "model_type", "qwen2", "but architecture Qwen3ForCausalLM has model_type \"qwen3\""},
  };
  for (const Case& k : cases) {
    Json j = k.config;
    if (k.value.is_null()) j.erase(k.field);
    else j[k.field] = k.value;
    const std::string e = thrown_error([&] { parse_model_config(j, "bad/config.json"); });
    EXPECT_NE(e.find("bad/config.json"), std::string::npos) << k.field << ": " << e;
    EXPECT_NE(e.find(k.expect), std::string::npos) << k.field << ": " << e;
  }
}

}  // namespace
}  // namespace glass
