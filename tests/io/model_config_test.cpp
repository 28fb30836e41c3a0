#include "base/error.h"
#include "io/model_config.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace glass {
namespace {

using test::thrown_error;

Json qwen_7b_config() {
  return parse_json(R"({
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
    "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
    "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "rope_scaling": null, "sliding_window": 131072, "use_sliding_window": false,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})",
                    "7b.json");
}

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
      {"model_type", "llama", "\"model_type\"", true},
      {"rope_scaling", Json{{"type", "yarn"}, {"factor", 4.0}}, "rope_scaling", true},
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

}  // namespace
}  // namespace glass
