#include "base/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace glass {
namespace {

TEST(Half, Bf16KnownValues) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xc000);
}

TEST(Half, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to the even mantissa (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up to even.
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, F16KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);       // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), 1023 * 0x1p-24f);  // largest subnormal
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);
  EXPECT_EQ(f32_to_f16(0x1p-26f), 0x0000);  // below half the smallest subnormal
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
}

TEST(Half, F16RoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float f = f16_to_f32(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), bits) << "half bits " << h;
  }
}

TEST(Half, F16RoundsHalfwayToEven) {
  // Between 1.0 (0x3c00) and the next half 1 + 2^-10: the midpoint goes to even (1.0).
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
  // Subnormal midpoint between 1 and 2 units of 2^-24 goes to 2 (even).
  EXPECT_EQ(f32_to_f16(1.5f * 0x1p-24f), 0x0002);
  EXPECT_EQ(f32_to_f16(2.5f * 0x1p-24f), 0x0002);
}

TEST(Half, Bf16RoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float f = bf16_to_f32(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), bits) << "bf16 bits " << h;
  }
}

}  // namespace
}  // namespace glass
