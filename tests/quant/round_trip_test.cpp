// Quantize then dequantize random and adversarial data, for every block type: the error
// stays within what the format allows, special blocks (all zero, one huge outlier,
// one sign only) come back sane, rows quantize independently, and re-quantizing decoded
// values is stable where the algorithm guarantees it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "quant/weight_type.h"

namespace glass {
namespace {

std::vector<WeightType> block_types() {
  std::vector<WeightType> types;
  for (const WeightTypeTraits& t : weight_types())
    if (is_block_quantized(t.type)) types.push_back(t.type);
  return types;
}

bool is_k_quant(WeightType t) { return traits(t).block_values == 256; }

std::vector<float> gaussian(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<std::byte> quantize(WeightType t, const std::vector<float>& x) {
  std::vector<std::byte> q(weight_row_bytes(t, static_cast<int64_t>(x.size())));
  quantize_values(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> dequantize(WeightType t, const std::vector<std::byte>& q, size_t n) {
  std::vector<float> y(n);
  dequantize_values(t, q.data(), y.data(), static_cast<int64_t>(n));
  return y;
}

std::vector<float> round_trip(WeightType t, const std::vector<float>& x) { return dequantize(t, quantize(t, x), x.size()); }

double rms_ratio(const float* x, const float* y, size_t n) {
  double e2 = 0, x2 = 0;
  for (size_t i = 0; i < n; ++i) {
    const double e = static_cast<double>(y[i]) - x[i];
    e2 += e * e;
    x2 += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(e2 / x2);
}

// How far an fp16 rounding may move v: half an ulp, 2^-11 relative for normal halves,
// 2^-25 absolute in the subnormal range.
double fp16_error(double v) { return std::max(std::fabs(v) * 0x1p-11, 0x1p-25); }

// The largest error a 32-value block of type t may have on any value: rounding to the
// nearest code (half a step; a whole step for the one code the symmetric types cannot
// reach, the end opposite the extreme value), plus the fp16 rounding of the scale
// times the largest code and of the min. 1e-5 relative covers float32 rounding.
double legacy_block_bound(WeightType t, const float* x) {
  float lo = x[0], hi = x[0], amax = 0;
  for (int j = 0; j < 32; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
    amax = std::max(amax, std::fabs(x[j]));
  }
  double bound = 0;
  switch (t) {
    case WeightType::Q8_0: bound = 0.5 * amax / 127 + 127 * fp16_error(amax / 127.0); break;
    case WeightType::Q4_0: bound = amax / 8.0 + 8 * fp16_error(amax / 8.0); break;
    case WeightType::Q5_0: bound = amax / 16.0 + 16 * fp16_error(amax / 16.0); break;
    case WeightType::Q4_1: {
      const double d = (static_cast<double>(hi) - lo) / 15;
      bound = 0.5 * d + 15 * fp16_error(d) + fp16_error(lo);
      break;
    }
    case WeightType::Q5_1: {
      const double d = (static_cast<double>(hi) - lo) / 31;
      bound = 0.5 * d + 31 * fp16_error(d) + fp16_error(lo);
      break;
    }
    default: ADD_FAILURE() << "not a 32-value type";
  }
  return bound * (1 + 1e-5) + 1e-5 * amax;
}

// The k-quants' scales come from a search, so their error has no simple per-value bound:
// these are the RMS errors (relative to the RMS of the data) of llama.cpp's own reference
// quantizer on Gaussian data, which ours reproduces byte for byte (golden_test.cpp), with
// 10% headroom: over a whole matrix, and for the worst super-block of it.
struct RmsBound {
  double overall, worst_block;
};
RmsBound k_quant_bound(WeightType t) {
  switch (t) {
    case WeightType::Q2_K: return {0.33, 0.41};
    case WeightType::Q3_K: return {0.167, 0.195};
    case WeightType::Q4_K: return {0.079, 0.091};
    case WeightType::Q5_K: return {0.040, 0.046};
    case WeightType::Q6_K: return {0.0196, 0.0232};
    default: ADD_FAILURE() << "not a k-quant"; return {0, 0};
  }
}

void expect_within_bounds(WeightType t, const std::vector<float>& x, const std::vector<float>& y) {
  const auto block = static_cast<size_t>(traits(t).block_values);
  if (!is_k_quant(t)) {
    for (size_t b = 0; b < x.size() / block; ++b) {
      const double bound = legacy_block_bound(t, &x[b * block]);
      for (size_t j = b * block; j < (b + 1) * block; ++j)
        ASSERT_LE(std::fabs(static_cast<double>(y[j]) - x[j]), bound) << weight_type_name(t) << " value " << j;
    }
    return;
  }
  const RmsBound bound = k_quant_bound(t);
  EXPECT_LE(rms_ratio(x.data(), y.data(), x.size()), bound.overall) << weight_type_name(t);
  for (size_t b = 0; b < x.size() / block; ++b)
    ASSERT_LE(rms_ratio(&x[b * block], &y[b * block], block), bound.worst_block) << weight_type_name(t) << " block " << b;
}

TEST(RoundTrip, GaussianAtSeveralMagnitudes) {
  // 37 rows of 768 values (3 super-blocks, 24 blocks of 32), at weight-like and far scales.
  constexpr size_t kRows = 37, kCols = 768;
  for (WeightType t : block_types()) {
    for (float sigma : {0.01f, 0.05f, 1.0f, 300.0f}) {
      const auto x = gaussian(kRows * kCols, sigma, 11);
      expect_within_bounds(t, x, round_trip(t, x));
    }
  }
}

TEST(RoundTrip, RowsAreIndependent) {
  constexpr size_t kRows = 5, kCols = 512;
  for (WeightType t : block_types()) {
    const auto x = gaussian(kRows * kCols, 0.05f, 3);
    const auto whole = quantize(t, x);
    const size_t row_bytes = weight_row_bytes(t, kCols);
    for (size_t r = 0; r < kRows; ++r) {
      std::vector<float> row(x.begin() + static_cast<ptrdiff_t>(r * kCols), x.begin() + static_cast<ptrdiff_t>((r + 1) * kCols));
      const auto alone = quantize(t, row);
      ASSERT_EQ(std::memcmp(alone.data(), whole.data() + r * row_bytes, row_bytes), 0) << weight_type_name(t) << " row " << r;
    }
  }
}

TEST(RoundTrip, AllZeroBlocksStayZero) {
  for (WeightType t : block_types()) {
    std::vector<float> x = gaussian(768, 1.0f, 5);
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // a whole super-block
    std::fill(x.begin() + 32, x.begin() + 64, 0.0f);     // a 32-value block inside one
    const auto y = round_trip(t, x);
    for (size_t i = 256; i < 512; ++i) ASSERT_EQ(y[i], 0.0f) << weight_type_name(t) << " value " << i;
    if (!is_k_quant(t)) {
      for (size_t i = 32; i < 64; ++i) ASSERT_EQ(y[i], 0.0f) << weight_type_name(t) << " value " << i;
    }
    const auto zeros = round_trip(t, std::vector<float>(512, 0.0f));
    for (float v : zeros) ASSERT_EQ(v, 0.0f) << weight_type_name(t);
  }
}

TEST(RoundTrip, OneHugeOutlier) {
  for (WeightType t : block_types()) {
    std::vector<float> x = gaussian(768, 1.0f, 6);  // three super-blocks, the last without an outlier
    x[77] = 1000.0f;
    x[300] = -1000.0f;
    const auto y = round_trip(t, x);
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << weight_type_name(t);
    // The extreme of its block maps onto an end code: only the fp16 rounding of the scales
    // (2^-11 relative) and of the min move it.
    EXPECT_NEAR(y[77], 1000.0f, 1.0f) << weight_type_name(t);
    EXPECT_NEAR(y[300], -1000.0f, 1.0f) << weight_type_name(t);
    // The blocks without an outlier are untouched by it.
    const size_t block = static_cast<size_t>(traits(t).block_values);
    for (size_t b = 0; b < x.size() / block; ++b) {
      const bool has_outlier = (77 / block == b) || (300 / block == b);
      if (has_outlier) continue;
      std::vector<float> xb(x.begin() + static_cast<ptrdiff_t>(b * block), x.begin() + static_cast<ptrdiff_t>((b + 1) * block));
      std::vector<float> yb(y.begin() + static_cast<ptrdiff_t>(b * block), y.begin() + static_cast<ptrdiff_t>((b + 1) * block));
      expect_within_bounds(t, xb, yb);
    }
  }
}

TEST(RoundTrip, OneSignOnly) {
  for (WeightType t : block_types()) {
    std::vector<float> negative = gaussian(1024, 0.05f, 7), positive = gaussian(1024, 0.05f, 8);
    for (float& v : negative) v = -std::fabs(v) - 0.02f;
    for (float& v : positive) v = std::fabs(v) + 0.02f;
    const auto yn = round_trip(t, negative), yp = round_trip(t, positive);
    expect_within_bounds(t, negative, yn);
    expect_within_bounds(t, positive, yp);
    for (float v : yn) ASSERT_LE(v, 0.0f) << weight_type_name(t);
  }
}

TEST(RoundTrip, ConstantBlocks) {
  for (WeightType t : block_types()) {
    for (float c : {0.3f, -0.3f}) {
      const std::vector<float> x(512, c);
      const auto y = round_trip(t, x);
      for (float v : y) ASSERT_NEAR(v, c, 0.3 * 0x1p-8) << weight_type_name(t);
    }
  }
}

// Non-finite and huge inputs give whatever bytes ggml's code gives them, but through
// defined behaviour (float-to-int conversions of inf / NaN are guarded; see
// quant/rounding.h), and they stay inside their block: the other blocks of the row are
// quantized as usual.
TEST(RoundTrip, NonFiniteValuesStayInTheirBlock) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (WeightType t : block_types()) {
    const size_t block = static_cast<size_t>(traits(t).block_values);
    std::vector<float> x = gaussian(6 * block, 0.05f, 12);
    x[0] = nan;
    x[block + 1] = inf;
    x[2 * block + 2] = -inf;
    x[3 * block + 3] = 3e38f;
    x[3 * block + 4] = -3e38f;  // the range overflows to inf
    x[4 * block + 5] = 1e-44f;  // a subnormal
    std::fill(x.begin() + static_cast<ptrdiff_t>(4 * block + 6), x.begin() + static_cast<ptrdiff_t>(5 * block), 0.0f);
    const auto y = round_trip(t, x);
    const std::vector<float> clean(x.begin() + static_cast<ptrdiff_t>(5 * block), x.end());
    const std::vector<float> clean_y(y.begin() + static_cast<ptrdiff_t>(5 * block), y.end());
    expect_within_bounds(t, clean, clean_y);
  }
}

// The 32-value types' quantizers map the block's extreme (and for Q4_1 / Q5_1 its min)
// onto an end code and round every other value to its nearest code, so decoded values
// quantize to the same bytes again. For Q8_0, Q4_0 and Q5_0 this is exact (the decoded
// extreme divides back to the stored fp16 scale) as long as that scale is a normal half;
// for Q4_1 and Q5_1 it also needs the block's range not to be tiny next to its min, as
// for zero-centred weights, or the recomputed scale can round to a neighbouring half.
TEST(RoundTrip, RequantizingDecodedValuesIsStableForThe32ValueTypes) {
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0, WeightType::Q5_0, WeightType::Q4_1, WeightType::Q5_1}) {
    const auto x = gaussian(64 * 1024, 0.05f, 9);
    const auto q = quantize(t, x);
    const auto q2 = quantize(t, dequantize(t, q, x.size()));
    EXPECT_EQ(q, q2) << weight_type_name(t);
  }
}

// The k-quants' searches may settle elsewhere on decoded values (for Q3_K, Q5_K and Q6_K
// they often do), so stability is not guaranteed; what holds is that a second round stays
// within the type's bound of the first round's values.
TEST(RoundTrip, RequantizingDecodedValuesStaysWithinBoundsForKQuants) {
  for (WeightType t : block_types()) {
    if (!is_k_quant(t)) continue;
    const auto x = gaussian(16 * 1024, 0.05f, 10);
    const auto y = round_trip(t, x);
    expect_within_bounds(t, y, round_trip(t, y));
  }
}

TEST(WeightTypeTable, EveryTypeHasCodecsAndGgmlGeometry) {
  struct Expected {
    const char* name;
    uint32_t ggml_id;
    int64_t values;
    size_t bytes;
    double bits_per_weight;
  };
  const Expected expected[] = {{"f32", 0, 1, 4, 32},         {"f16", 1, 1, 2, 16},      {"bf16", 30, 1, 2, 16},
                               {"q8_0", 8, 32, 34, 8.5},     {"q4_0", 2, 32, 18, 4.5},  {"q4_1", 3, 32, 20, 5},
                               {"q5_0", 6, 32, 22, 5.5},     {"q5_1", 7, 32, 24, 6},    {"q2_K", 10, 256, 84, 2.625},
                               {"q3_K", 11, 256, 110, 3.4375}, {"q4_K", 12, 256, 144, 4.5}, {"q5_K", 13, 256, 176, 5.5},
                               {"q6_K", 14, 256, 210, 6.5625}};
  ASSERT_EQ(weight_types().size(), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    const WeightTypeTraits& t = weight_types()[i];
    EXPECT_STREQ(t.name, expected[i].name);
    EXPECT_EQ(t.ggml_type, expected[i].ggml_id) << t.name;
    EXPECT_EQ(t.block_values, expected[i].values) << t.name;
    EXPECT_EQ(t.block_bytes, expected[i].bytes) << t.name;
    EXPECT_EQ(8.0 * static_cast<double>(t.block_bytes) / static_cast<double>(t.block_values), expected[i].bits_per_weight);
    EXPECT_NE(t.dequantize, nullptr) << t.name;
    EXPECT_NE(t.quantize, nullptr) << t.name;
    EXPECT_EQ(weight_type_of_ggml(t.ggml_type), &t);
  }
  EXPECT_EQ(encodable_weight_type_names(), "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K");
}

TEST(WeightTypeTable, RowsMustHoldWholeBlocks) {
  EXPECT_TRUE(row_fits(WeightType::Q4_K, 4864));
  EXPECT_FALSE(row_fits(WeightType::Q4_K, 896));  // Qwen2.5-0.5B's hidden size: 3.5 super-blocks
  EXPECT_TRUE(row_fits(WeightType::Q4_1, 896));
  EXPECT_EQ(weight_row_bytes(WeightType::Q6_K, 4864), 19u * 210);
  std::vector<float> x(896, 1.0f);
  std::vector<std::byte> q(4096), out(4096);
  try {
    quantize_values(WeightType::Q4_K, x.data(), q.data(), 896);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q4_K needs rows whose length is a multiple of 256"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(dequantize_values(WeightType::Q5_1, q.data(), x.data(), 48), Error);
}

}  // namespace
}  // namespace glass
