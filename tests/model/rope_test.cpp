// RoPE tables against values computed from transformers' formulas (modeling_rope_utils)
// in float64 outside glass; the fixtures check the truncated YaRN of the Qwen2.5 cards.
#include "model/rope.h"

#include <gtest/gtest.h>

#include <cmath>

namespace glass {
namespace {

ModelConfig head16() {
  ModelConfig c;
  c.head_dim = 16;
  c.rope_theta = 1e6;
  c.max_position_embeddings = 131072;
  return c;
}

TEST(RopeTable, DefaultIsThetaToTheMinusTwoIOverDim) {
  const RopeTable r = RopeTable::from_config(head16());
  ASSERT_EQ(r.inv_freq.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], std::pow(1e6, -2.0 * i / 16));
  EXPECT_EQ(r.attention_factor, 1.0);
}

TEST(RopeTable, LinearDividesEveryFrequency) {
  ModelConfig c = head16();
  c.rope_scaling.type = RopeScalingType::kLinear;
  c.rope_scaling.factor = 2.5;
  const RopeTable r = RopeTable::from_config(c);
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], std::pow(1e6, -2.0 * i / 16) / 2.5);
  EXPECT_EQ(r.attention_factor, 1.0);
}

TEST(RopeTable, YarnWithoutTruncationRampsBetweenFractionalBounds) {
  ModelConfig c = head16();
  c.rope_scaling.type = RopeScalingType::kYarn;
  c.rope_scaling.factor = 4;
  c.rope_scaling.original_max_position_embeddings = 32768;
  c.rope_scaling.truncate = false;
  c.rope_scaling.attention_factor = 0.1 * std::log(4.0) + 1;
  const RopeTable r = RopeTable::from_config(c);
  const double expected[8] = {1.0, 0.17782794100389226, 0.03162277660168379, 0.0055172704751341225,
                              0.0006074079378798391, 4.445698525097307e-05, 7.905694150420949e-06,
                              1.4058533129758728e-06};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(r.inv_freq[i], expected[i], 1e-13 * expected[i]) << i;
  EXPECT_NEAR(r.correction_low, 2.9494934510422626, 1e-12);
  EXPECT_NEAR(r.correction_high, 4.956360088802137, 1e-12);
  EXPECT_NEAR(r.attention_factor, 1.138629436111989, 1e-15);
}

TEST(RopeTable, AnglesAreScaledByTheAttentionFactor) {
  ModelConfig c = head16();
  c.rope_scaling.type = RopeScalingType::kYarn;
  c.rope_scaling.factor = 4;
  c.rope_scaling.original_max_position_embeddings = 32768;
  c.rope_scaling.attention_factor = 1.25;
  const RopeTable r = RopeTable::from_config(c);
  const int32_t positions[2] = {0, 1000};
  float cos[16], sin[16];
  r.angles(positions, 2, cos, sin);
  for (int i = 0; i < 8; ++i) {
    EXPECT_FLOAT_EQ(cos[i], 1.25f);
    EXPECT_FLOAT_EQ(sin[i], 0.0f);
    EXPECT_FLOAT_EQ(cos[8 + i], static_cast<float>(std::cos(1000 * r.inv_freq[i]) * 1.25));
    EXPECT_FLOAT_EQ(sin[8 + i], static_cast<float>(std::sin(1000 * r.inv_freq[i]) * 1.25));
  }
}

}  // namespace
}  // namespace glass
