// llama-quantize's type choices, on model shapes whose answer llama-quantize's rules give
// directly (the GGUF fixture test checks whole files against llama-quantize itself).
#include <gtest/gtest.h>

#include <map>

#include "convert/quant_preset.h"

namespace glass {
namespace {

const QuantPreset& preset(const char* name) {
  const QuantPreset* p = find_quant_preset(name);
  EXPECT_NE(p, nullptr) << name;
  return *p;
}

std::string type_of(const char* preset_name, const QuantModelShape& m, const std::string& name, int64_t cols,
                    bool pure = false, int64_t dims = 2) {
  return weight_type_name(quant_type_for(preset(preset_name), pure, m, name, dims, cols, WeightType::F32).type);
}

TEST(QuantPreset, NamesAsLlamaQuantizeDoes) {
  EXPECT_STREQ(preset("q4_k_m").name, "Q4_K_M");
  EXPECT_STREQ(preset("Q4_K").name, "Q4_K_M");  // llama-quantize's alias
  EXPECT_STREQ(preset("Q5_K").name, "Q5_K_M");
  EXPECT_EQ(preset("Q4_K_M").file_type, 15u);
  EXPECT_EQ(preset("BF16").file_type, 32u);
  EXPECT_EQ(find_quant_preset("Q4_K_X"), nullptr);
  EXPECT_EQ(find_quant_preset(""), nullptr);
  EXPECT_NE(quant_preset_names().find("Q6_K"), std::string::npos);
}

// Qwen2.5-7B: 28 layers, hidden 3584 (14 super-blocks), untied output.
TEST(QuantPreset, Q4KMGivesAttnVAndFfnDownMoreBitsInTheLayersLlamaQuantizePicks) {
  const QuantModelShape m{.layers = 28, .experts = 0, .gqa = 7, .tied_embeddings = false};
  std::map<int, std::string> v;
  for (int l = 0; l < 28; ++l) v[l] = type_of("Q4_K_M", m, "blk." + std::to_string(l) + ".attn_v.weight", 3584);
  // use_more_bits: the first 28/8 = 3 layers, the last from 7*28/8 = 24, every third between.
  for (int l : {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}) EXPECT_EQ(v[l], "q6_K") << "layer " << l;
  for (int l : {3, 4, 6, 7, 9, 10, 21, 22}) EXPECT_EQ(v[l], "q4_K") << "layer " << l;
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.5.ffn_down.weight", 18944), "q6_K");
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.4.ffn_down.weight", 18944), "q4_K");
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.4.attn_q.weight", 3584), "q4_K");
  EXPECT_EQ(type_of("Q4_K_M", m, "output.weight", 3584), "q6_K");
  EXPECT_EQ(type_of("Q4_K_M", m, "token_embd.weight", 3584), "q4_K");  // untied: the base type
  EXPECT_EQ(type_of("Q4_K_S", m, "blk.3.attn_v.weight", 3584), "q5_K");
  EXPECT_EQ(type_of("Q4_K_S", m, "blk.4.attn_v.weight", 3584), "q4_K");
  EXPECT_EQ(type_of("Q8_0", m, "output.weight", 3584), "q8_0");
  EXPECT_EQ(type_of("Q4_0", m, "output.weight", 3584), "q6_K");
}

// Qwen2.5-0.5B: 896 columns are not whole 256-value super-blocks.
TEST(QuantPreset, RowsThatAreNotWholeSuperBlocksFallBackAsLlamaQuantizeDoes) {
  const QuantModelShape m{.layers = 24, .experts = 0, .gqa = 7, .tied_embeddings = true};
  EXPECT_EQ(type_of("Q4_K_M", m, "token_embd.weight", 896), "q8_0");  // tied: the output rule
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.3.attn_q.weight", 896), "q5_0");
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.0.attn_v.weight", 896), "q8_0");  // Q6_K falls back to Q8_0
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.5.ffn_down.weight", 4864), "q6_K");  // 4864 = 19 x 256
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.4.ffn_down.weight", 4864), "q4_K");
  EXPECT_EQ(type_of("Q5_K_M", m, "blk.3.attn_q.weight", 896), "q5_1");
  EXPECT_EQ(type_of("Q2_K", m, "blk.3.attn_q.weight", 896, true), "q4_0");
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.3.attn_q.weight", 100, true), "f16");  // not even 32-value blocks
  EXPECT_EQ(type_of("Q6_K", m, "blk.3.attn_q.weight", 896, true), "q8_0");
}

TEST(QuantPreset, LeavesWhatLlamaQuantizeNeverQuantizes) {
  const QuantModelShape m{.layers = 4};
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.0.attn_norm.weight", 256, false, 1), "f32");
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.0.attn_q.bias", 256, false, 1), "f32");
  EXPECT_EQ(type_of("Q4_K_M", m, "blk.0.ffn_gate_inp.weight", 256), "f32");  // the MoE router
  EXPECT_EQ(type_of("F16", m, "blk.0.attn_q.weight", 256), "f16");
  EXPECT_EQ(type_of("BF16", m, "token_embd.weight", 100), "bf16");  // float types have no blocks to fit
}

TEST(QuantPreset, SeventyBillionSizeClassAndEightExperts) {
  const QuantModelShape big{.layers = 80, .experts = 0, .gqa = 8, .tied_embeddings = false, .size_class_70b = true};
  EXPECT_EQ(type_of("Q4_K_M", big, "blk.11.attn_v.weight", 8192), "q5_K");  // Q4_K, raised
  EXPECT_EQ(type_of("Q4_K_M", big, "blk.0.attn_v.weight", 8192), "q6_K");
  const QuantModelShape eight{.layers = 32, .experts = 8};
  EXPECT_EQ(type_of("Q4_K_M", eight, "blk.3.attn_k.weight", 4096), "q8_0");
  EXPECT_EQ(type_of("Q4_K_M", eight, "blk.3.attn_output.weight", 4096), "q5_K");
}

}  // namespace
}  // namespace glass
