#include "sampling/rng.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/test_support.h"

namespace glass {
namespace {

// Reference outputs of the published algorithms, so an accidental change of generator,
// seeding or conversion is caught.
TEST(Rng, SplitMix64MatchesReference) {
  SplitMix64 mix(0);
  EXPECT_EQ(mix.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(mix.next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(mix.next(), 0x06c45d188009454full);
}

TEST(Rng, Xoshiro256StarStarMatchesReference) {
  Rng rng = Rng::from_state({1, 2, 3, 4});
  EXPECT_EQ(rng.next_u64(), 11520ull);
  EXPECT_EQ(rng.next_u64(), 0ull);
  EXPECT_EQ(rng.next_u64(), 1509978240ull);
  EXPECT_EQ(rng.next_u64(), 1215971899390074240ull);
}

TEST(Rng, SeedGivesFixedFirstOutputs) {
  Rng rng(42);
  EXPECT_EQ(rng.next_u64(), 0x15780b2e0c2ec716ull);
  EXPECT_EQ(rng.next_u64(), 0x6104d9866d113a7eull);
  EXPECT_EQ(rng.next_u64(), 0xae17533239e499a1ull);
  EXPECT_EQ(rng.next_u64(), 0xecb8ad4703b360a1ull);
  Rng again(42);
  EXPECT_EQ(again.next_double(), static_cast<double>(0x15780b2e0c2ec716ull >> 11) * 0x1.0p-53);
  EXPECT_DOUBLE_EQ(Rng(42).next_double(), 0.083862971059882163);
}

TEST(Rng, SameSeedSameStreamAndSeedsDiffer) {
  Rng a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= x != c.next_u64();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, DoublesAreMultiplesOf2ToMinus53InUnitInterval) {
  Rng rng(1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_EQ(std::ldexp(u, 53), std::floor(std::ldexp(u, 53)));
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

TEST(Rng, AllZeroStateIsRefused) {
  EXPECT_NE(test::thrown_error([] { Rng::from_state({0, 0, 0, 0}); }).find("all zero"), std::string::npos);
}

}  // namespace
}  // namespace glass
