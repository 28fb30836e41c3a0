// Every SIMD kernel against the scalar reference, on random inputs of odd and aligned
// sizes, for every SIMD target this CPU runs; plus batch and thread-count invariance.
#include "kernels/cpu_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/half.h"
#include "quant/blocks.h"
#include "kernels/bf16_dot_kernels.h"
#include "kernels/reference_kernels.h"
#include "kernels/simd_kernels.h"

namespace glass {
namespace {

std::vector<float> randn(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Move-only: w.data points into bytes.
struct Matrix {
  Matrix() = default;
  Matrix(Matrix&&) = default;
  Matrix& operator=(Matrix&&) = default;
  Matrix(const Matrix&) = delete;
  std::vector<std::byte> bytes;
  WeightMatrix w;
};

Matrix make_matrix(WeightType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  Matrix m;
  const size_t row_bytes = weight_row_bytes(t, cols);
  m.bytes.resize(row_bytes * static_cast<size_t>(rows));
  const auto values = randn(static_cast<size_t>(rows * cols), rng, 0.5f);
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, &values[r * cols], cols, m.bytes.data() + r * row_bytes);
  m.w = {t, m.bytes.data(), rows, cols, row_bytes};
  return m;
}

// The same values in the interleaved layout the model loads q8_0 and q4_0 into.
Matrix interleaved(const Matrix& m) {
  Matrix out;
  out.bytes.resize(m.bytes.size());
  out.w = interleave_rows(m.w, out.bytes.data());
  return out;
}

// The same values in the lane layout the model loads q4_1, q5_0, q5_1 and the k-quants into.
Matrix lane_blocked(const Matrix& m) {
  Matrix out;
  out.bytes.resize(m.bytes.size());
  out.w = lane_block_rows(m.w, out.bytes.data());
  return out;
}

// Block types in both layouts; the others as they are.
std::vector<Matrix> layouts(Matrix m) {
  std::vector<Matrix> all;
  if (interleavable(m.w.type)) all.push_back(interleaved(m));
  if (lane_blockable(m.w.type)) all.push_back(lane_blocked(m));
  all.push_back(std::move(m));
  return all;
}

std::string layout_name(const WeightMatrix& w) {
  return std::string(weight_type_name(w.type)) + (w.interleaved ? " interleaved" : "") + (w.block_lanes ? " in lanes" : "");
}

// The activations a type's kernel actually multiplies: as they are for the float kernels,
// else as ggml quantizes them for its dot products.
std::vector<float> kernel_activations(const WeightMatrix& w, const std::vector<float>& x) {
  const ActivationFormat format = activation_format(w);
  std::vector<float> out(x);
  if (format == ActivationFormat::Int8x32) {
    // quantize_row_q8_0 on x86: values times 127 / amax, rounded to even; the scale as an f16.
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      const float id = amax != 0 ? 127.0f / amax : 0.0f, d = f16_to_f32(f32_to_f16(amax / 127.0f));
      for (int j = 0; j < 32; ++j) out[b * 32 + j] = std::nearbyint(x[b * 32 + j] * id) * d;
    }
  } else if (format == ActivationFormat::Int12x32 || format == ActivationFormat::Int12x256) {
    // 12 bits per block of 32 values (the lane kernels) or per super-block of 256 (the
    // k-quants'): values times 2047 / amax, rounded to even; the scale amax / 2047.
    const size_t block = format == ActivationFormat::Int12x32 ? 32 : 256;
    for (size_t b = 0; b < x.size() / block; ++b) {
      float amax = 0;
      for (size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(x[b * block + j]));
      const float id = amax != 0 ? 2047.0f / amax : 0.0f, d = amax / 2047.0f;
      for (size_t j = 0; j < block; ++j) out[b * block + j] = std::nearbyint(x[b * block + j] * id) * d;
    }
  }
  return out;
}

std::vector<WeightType> all_types() {
  std::vector<WeightType> out;
  for (const WeightTypeTraits& t : weight_types()) out.push_back(t.type);
  return out;
}

// Column counts that are whole blocks of the type, odd ones among them.
std::vector<int64_t> column_sizes(WeightType type) {
  switch (traits(type).block_values) {
    case 1: return {1, 7, 16, 37, 64, 100, 896};
    case 32: return {32, 64, 96, 160, 544, 896};
    default: return {256, 768};
  }
}

// Every path this CPU runs: each SIMD target, and on the AVX-512 and AVX2 targets also with
// the extensions they have beside (VNNI; BF16) and without them. Tests build their CpuKernels
// with features_.
class SimdTargets : public ::testing::Test {
 protected:
  void TearDown() override { simd::force_target(0); }
  template <class F>
  void for_each_target(F&& f) {
    const auto targets = simd::available_targets();
    ASSERT_FALSE(targets.empty());
    const CpuFeatures all = CpuFeatures::detect();
    for (int64_t t : targets) {
      simd::force_target(t);
      const std::string name = simd::name_of_target(t);
      std::vector<CpuFeatures> variants = {CpuFeatures{}};
      if ((all.avx512_vnni || all.avx512_bf16) && name.rfind("AVX3", 0) == 0) variants.push_back(all);
      if (all.avx2_vnni && name == "AVX2") variants.push_back(all);
      for (const CpuFeatures& v : variants) {
        features_ = v;
        const bool vnni = name == "AVX2" ? v.avx2_vnni : v.avx512_vnni;
        const bool bf16 = v.avx512_bf16 && name.rfind("AVX3", 0) == 0;
        SCOPED_TRACE("SIMD target " + name + (vnni ? " + VNNI" : "") + (bf16 ? " + BF16" : ""));
        f();
      }
    }
    simd::force_target(0);
    features_ = CpuFeatures::detect();
  }
  CpuFeatures features_ = CpuFeatures::detect();
};

TEST_F(SimdTargets, MatmulMatchesReferenceForEveryTypeAndShape) {
  std::mt19937 rng(1);
  ThreadPool pool(2);
  for_each_target([&] {
    for (WeightType type : all_types()) {
      for (int64_t cols : column_sizes(type)) {
        for (int64_t rows : {1, 5, 8, 13, 33}) {
          for (int64_t n : {1, 2, 3, 4, 7, 9}) {
            SCOPED_TRACE(std::string(weight_type_name(type)) + " rows " + std::to_string(rows) + " cols " +
                         std::to_string(cols) + " n " + std::to_string(n));
            Matrix m = make_matrix(type, rows, cols, rng);
            const auto x = randn(static_cast<size_t>(n * cols), rng);
            const auto bias = randn(static_cast<size_t>(rows), rng);
            std::vector<float> expect(static_cast<size_t>(n * rows)), got(expect.size());
            for (const Matrix& layout : layouts(std::move(m))) {
              // The activations as this layout's kernels round them (floats for q4_1 / q5_0 /
              // q5_1 row-major, 12 bits in lanes).
              ReferenceKernels().matmul(layout.w, kernel_activations(layout.w, x).data(), n, bias.data(), expect.data());
              CpuKernels fast(pool, features_);
              fast.matmul(layout.w, x.data(), n, bias.data(), got.data());
              for (size_t i = 0; i < got.size(); ++i) {
                // float32 accumulation in another order than the reference's double
                const double tol = 2e-6 * std::sqrt(static_cast<double>(cols)) * (1.0 + std::fabs(expect[i])) + 1e-6;
                ASSERT_NEAR(got[i], expect[i], tol) << layout_name(layout.w) << " element " << i;
              }
            }
          }
        }
      }
    }
  });
}

// q4_1, q5_0, q5_1 and the k-quants go into lanes where CpuFeatures::lanes says (the AVX-512
// paths) and back to row-major where it does not, the bytes as they were; the kernels say which
// they run.
TEST(CpuLayout, LanesFollowTheFeatures) {
  std::mt19937 rng(5);
  CpuFeatures with, without;
  with.lanes = true;
  ThreadPool pool(1);
  for (WeightType type : {WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1, WeightType::Q4_K, WeightType::Q5_K,
                          WeightType::Q6_K}) {
    const bool kquant = traits(type).block_values == kSuperBlock;
    const Matrix m = make_matrix(type, 3, kquant ? 768 : 544, rng);
    EXPECT_TRUE(cpu_layout_differs(m.w, with));
    EXPECT_FALSE(cpu_layout_differs(m.w, without));
    std::unique_ptr<std::byte[]> laid_bytes, back_bytes;
    const WeightMatrix laid = cpu_layout(m.w, laid_bytes, with);
    EXPECT_TRUE(laid.block_lanes);
    EXPECT_NE(std::memcmp(laid.data, m.w.data, m.w.bytes()), 0) << weight_type_name(type);
    EXPECT_FALSE(cpu_layout_differs(laid, with));
    EXPECT_TRUE(cpu_layout_differs(laid, without));
    EXPECT_NE(CpuKernels(pool, with).matmul_path(laid, 1).find(kquant ? "in lanes" : "a block a lane"), std::string::npos);
    const WeightMatrix back = cpu_layout(laid, back_bytes, without);
    EXPECT_FALSE(back.block_lanes);
    EXPECT_EQ(std::memcmp(back.data, m.w.data, m.w.bytes()), 0) << weight_type_name(type);
    EXPECT_NE(CpuKernels(pool, without).matmul_path(back, 1).find(kquant ? "integer dot products, 12-bit" : "decoded to f32"),
              std::string::npos);
  }
}

// The lane kernels at their bounds: every code the largest (q4_1 15, q5_0 / q5_1 31) against
// activations of one sign and full scale (X = +-2047, so the high plane is 127 or -128), where
// the int16 sums of the kernels without VNNI are closest to overflowing, and mixed signs; a
// full group and a last group of one block; every path against the reference.
TEST_F(SimdTargets, LaneKernelsAtTheirBounds) {
  ThreadPool pool(2);
  const int64_t rows = 5, cols = 544, n = 4;
  for_each_target([&] {
    for (WeightType type : {WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1}) {
      Matrix m;
      m.bytes.assign(weight_row_bytes(type, cols) * rows, std::byte{0xff});  // codes and fifth bits all set
      m.w = {type, m.bytes.data(), rows, cols, weight_row_bytes(type, cols)};
      const size_t block = traits(type).block_bytes;
      for (size_t b = 0; b < m.bytes.size() / block; ++b) {
        const uint16_t scale = 0x3c00 + static_cast<uint16_t>(b % 7), min = 0xb800;  // ~1.0, -0.5
        std::memcpy(&m.bytes[b * block], &scale, 2);
        if (type != WeightType::Q5_0) std::memcpy(&m.bytes[b * block + 2], &min, 2);
      }
      std::vector<float> x(static_cast<size_t>(n * cols));
      for (int64_t c = 0; c < cols; ++c) {
        x[c] = -1.0f;                                 // X = -2047: high plane -128
        x[cols + c] = 1.0f;                           // X = 2047: 127
        x[2 * cols + c] = c % 2 != 0 ? -3.0f : 3.0f;  // mixed signs
        x[3 * cols + c] = c % 32 == 5 ? -8.0f : 0.25f;
      }
      for (const Matrix& layout : layouts(std::move(m))) {
        std::vector<float> expect(static_cast<size_t>(n * rows)), got(expect.size()), alone(static_cast<size_t>(rows));
        ReferenceKernels().matmul(layout.w, kernel_activations(layout.w, x).data(), n, nullptr, expect.data());
        CpuKernels k(pool, features_);
        k.matmul(layout.w, x.data(), n, nullptr, got.data());
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], expect[i], 2e-6 * std::sqrt(static_cast<double>(cols)) * (1.0 + std::fabs(expect[i])))
              << layout_name(layout.w) << " element " << i;
        for (int64_t t = 0; t < n; ++t) {
          k.matmul(layout.w, &x[t * cols], 1, nullptr, alone.data());
          for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(alone[r], got[t * rows + r]) << layout_name(layout.w);
        }
      }
    }
  });
}

TEST_F(SimdTargets, MatmulIsBatchAndThreadInvariant) {
  std::mt19937 rng(2);
  ThreadPool one(1), two(2), three(3);
  for_each_target([&] {
    for (WeightType type : all_types()) {
      // Whole blocks of every type: 96 (an odd number of vectors) or one k-quant super-block.
      const int64_t rows = 37, cols = traits(type).block_values == kSuperBlock ? 256 : 96, n = 11;
      for (const Matrix& m : layouts(make_matrix(type, rows, cols, rng))) {
      const auto x = randn(static_cast<size_t>(n * cols), rng);
      std::vector<float> batched(static_cast<size_t>(n * rows));
      CpuKernels(two, features_).matmul(m.w, x.data(), n, nullptr, batched.data());
      for (ThreadPool* pool : {&one, &two, &three}) {
        CpuKernels k(*pool, features_);
        std::vector<float> again(batched.size());
        k.matmul(m.w, x.data(), n, nullptr, again.data());
 ASSERT_EQ(again, batched) << layout_name(m.w) << " with " << pool->size() << " threads";
        for (int64_t t = 0; t < n; ++t) {
          std::vector<float> alone(static_cast<size_t>(rows));
          k.matmul(m.w, &x[t * cols], 1, nullptr, alone.data());
          for (int64_t r = 0; r < rows; ++r)
            ASSERT_EQ(alone[r], batched[t * rows + r]) << layout_name(m.w) << " token " << t << " row " << r;
        }
        // A sub-batch starting elsewhere gives the same rows too.
        std::vector<float> sub(static_cast<size_t>(4 * rows));
        k.matmul(m.w, &x[5 * cols], 4, nullptr, sub.data());
        for (int64_t i = 0; i < 4 * rows; ++i) ASSERT_EQ(sub[i], batched[5 * rows + i]);
      }
      }
    }
  });
}

// Float rows of 2048 columns and more go through prefill's column chunks (simd_kernels.cpp,
// FloatPrefillColumns): a tail past the last whole vector, rows and tokens past the last
// whole tile, and every token's result the same bits as alone, near the reference.
TEST_F(SimdTargets, LongFloatRowsInColumnChunksAreBatchInvariant) {
  std::mt19937 rng(5);
  ThreadPool pool(2);
  for_each_target([&] {
    for (WeightType type : {WeightType::BF16, WeightType::F16, WeightType::F32}) {
      const int64_t rows = 13, cols = 2 * 1024 + 1024 + 40, n = 14;
      SCOPED_TRACE(weight_type_name(type));
      for (const Matrix& m : layouts(make_matrix(type, rows, cols, rng))) {
        const auto x = randn(static_cast<size_t>(n * cols), rng);
        std::vector<float> batched(static_cast<size_t>(n * rows)), expect(batched.size());
        CpuKernels k(pool, features_);
        k.matmul(m.w, x.data(), n, nullptr, batched.data());
        ReferenceKernels().matmul(m.w, kernel_activations(m.w, x).data(), n, nullptr, expect.data());
        for (size_t i = 0; i < batched.size(); ++i)
          ASSERT_NEAR(batched[i], expect[i], 2e-6 * std::sqrt(static_cast<double>(cols)) * (1.0 + std::fabs(expect[i])) + 1e-6)
              << layout_name(m.w) << " element " << i;
        for (int64_t t = 0; t < n; ++t) {
          std::vector<float> alone(static_cast<size_t>(rows));
          k.matmul(m.w, &x[t * cols], 1, nullptr, alone.data());
          for (int64_t r = 0; r < rows; ++r)
            ASSERT_EQ(alone[r], batched[t * rows + r]) << layout_name(m.w) << " token " << t << " row " << r;
        }
      }
    }
  });
}

// The same values in the AMX tiles' layout, which kernels without AMX read by decoding rows.
Matrix tiled(const Matrix& m) {
  Matrix out;
  out.bytes.resize(tiled_bytes(m.w.type, m.w.rows, m.w.cols) + 64);
  out.w = tile_rows(m.w, out.bytes.data() + (64 - reinterpret_cast<uintptr_t>(out.bytes.data()) % 64) % 64);
  return out;
}

// MatmulPrecision::Bf16: bf16 weights multiply activations rounded to bf16 on every path
// (AVX512-BF16 dot products where the CPU has them, the float kernels on rounded activations
// elsewhere, a tiled matrix's rows decoded), against the reference rounding them the same
// way; the other types are unaffected. Rows of 2088 columns go through the dot kernel's
// column chunks.
TEST_F(SimdTargets, Bf16ActivationsMatchTheReferenceRoundingThemToo) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  ReferenceKernels ref(MatmulPrecision::Bf16), unrounded;
  for_each_target([&] {
    int64_t differs_from_float = 0;
    for (WeightType type : {WeightType::BF16, WeightType::F32, WeightType::Q8_0}) {
      std::vector<int64_t> sizes = column_sizes(type);
      if (type == WeightType::BF16) sizes.push_back(2088);
      for (int64_t cols : sizes) {
        for (int64_t rows : {1, 5, 8, 13, 33}) {
          for (int64_t n : {1, 2, 3, 7, 9}) {
            SCOPED_TRACE(std::string(weight_type_name(type)) + " rows " + std::to_string(rows) + " cols " +
                         std::to_string(cols) + " n " + std::to_string(n));
            Matrix m = make_matrix(type, rows, cols, rng);
            const auto x = randn(static_cast<size_t>(n * cols), rng);
            const auto bias = randn(static_cast<size_t>(rows), rng);
            std::vector<float> expect(static_cast<size_t>(n * rows)), as_float(expect.size()), got(expect.size());
            ref.matmul(m.w, kernel_activations(m.w, x).data(), n, bias.data(), expect.data());
            unrounded.matmul(m.w, kernel_activations(m.w, x).data(), n, bias.data(), as_float.data());
            std::vector<Matrix> all = layouts(std::move(m));
            if (type == WeightType::BF16) all.push_back(tiled(all.front()));
            for (const Matrix& layout : all) {
              CpuKernels fast(pool, features_, MatmulPrecision::Bf16);
              fast.matmul(layout.w, x.data(), n, bias.data(), got.data());
              for (size_t i = 0; i < got.size(); ++i) {
                const double tol = 2e-6 * std::sqrt(static_cast<double>(cols)) * (1.0 + std::fabs(expect[i])) + 1e-6;
                ASSERT_NEAR(got[i], expect[i], tol) << layout_name(layout.w) << (layout.w.tiled ? " tiled" : "")
                                                    << " via " << fast.matmul_path(layout.w, n) << " element " << i;
                differs_from_float += std::fabs(got[i] - as_float[i]) > tol;
                if (type != WeightType::BF16) {
                  ASSERT_EQ(expect[i], as_float[i]) << "only bf16 weights round";
                }
              }
            }
          }
        }
      }
    }
    // The rounding is not a no-op: many bf16 results move past the tolerance.
    EXPECT_GT(differs_from_float, 1000);
  });
}

// Every output the same bits however the batch is made up, split between threads or cut
// into token blocks (70 tokens: past the dot kernel's blocks of 64 and 62) and column chunks.
TEST_F(SimdTargets, Bf16ActivationsAreBatchAndThreadInvariant) {
  std::mt19937 rng(12);
  ThreadPool one(1), two(2), three(3);
  for_each_target([&] {
    for (int64_t cols : {96, 100, 2088}) {
      const int64_t rows = 37, n = 70;
      SCOPED_TRACE("cols " + std::to_string(cols));
      const Matrix m = make_matrix(WeightType::BF16, rows, cols, rng);
      const auto x = randn(static_cast<size_t>(n * cols), rng);
      const auto bias = randn(static_cast<size_t>(rows), rng);
      std::vector<float> batched(static_cast<size_t>(n * rows));
      CpuKernels(two, features_, MatmulPrecision::Bf16).matmul(m.w, x.data(), n, bias.data(), batched.data());
      for (ThreadPool* pool : {&one, &two, &three}) {
        CpuKernels k(*pool, features_, MatmulPrecision::Bf16);
        std::vector<float> again(batched.size());
        k.matmul(m.w, x.data(), n, bias.data(), again.data());
        ASSERT_EQ(again, batched) << pool->size() << " threads";
        for (int64_t t = 0; t < n; ++t) {
          std::vector<float> alone(static_cast<size_t>(rows));
          k.matmul(m.w, &x[t * cols], 1, bias.data(), alone.data());
          for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(alone[r], batched[t * rows + r]) << "token " << t << " row " << r;
        }
        std::vector<float> sub(static_cast<size_t>(5 * rows));
        k.matmul(m.w, &x[33 * cols], 5, bias.data(), sub.data());
        for (int64_t i = 0; i < 5 * rows; ++i) ASSERT_EQ(sub[i], batched[33 * rows + i]);
      }
    }
  });
}

// The rounding every path applies is f32_to_bf16_flushed's, bit for bit: ties to even,
// NaNs quiet, zeros and denormals to a zero of their sign, the largest floats to infinity.
TEST(Bf16Rounding, EveryPathRoundsAsTheScalarConversion) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 1.00390625f /* tie, to even */, 1.01171875f /* tie, up */,
                               1e-40f, -1e-40f, 1.17549435e-38f /* smallest normal */, 3.4028235e38f,
                               -3.4028235e38f, INFINITY, -INFINITY, std::bit_cast<float>(0x7f800001u),
                               std::bit_cast<float>(0xffc12345u), 65504.0f, 3.14159265f};
  EXPECT_EQ(f32_to_bf16_flushed(1e-40f), 0x0000);
  EXPECT_EQ(f32_to_bf16_flushed(-1e-40f), 0x8000);
  EXPECT_EQ(f32_to_bf16_flushed(1.00390625f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_flushed(1.01171875f), 0x3f82);
  EXPECT_EQ(f32_to_bf16_flushed(3.4028235e38f), 0x7f80);
  EXPECT_EQ(f32_to_bf16_flushed(std::bit_cast<float>(0x7f800001u)), 0x7fc0);
  std::mt19937 rng(13);
  for (float v : randn(1000, rng, 100.0f)) values.push_back(v);
  for (int i = 0; i < 200; ++i) values.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  const auto count = static_cast<int64_t>(values.size());
  std::vector<uint16_t> want(values.size());
  for (size_t i = 0; i < values.size(); ++i) want[i] = f32_to_bf16_flushed(values[i]);
  auto bits_of = [](const std::vector<float>& v) {
    std::vector<uint16_t> out;
    for (float f : v) {
      const uint32_t u = std::bit_cast<uint32_t>(f);
      EXPECT_EQ(u & 0xffffu, 0u) << "not a bf16 value: " << std::hex << u;
      out.push_back(static_cast<uint16_t>(u >> 16));
    }
    return out;
  };
  for (int64_t target : simd::available_targets()) {
    simd::force_target(target);
    std::vector<float> rounded(values.size());
    simd::round_to_bf16(values.data(), rounded.data(), count);
    EXPECT_EQ(bits_of(rounded), want) << simd::name_of_target(target);
  }
  simd::force_target(0);
  if (!bf16dot::cpu_has_avx512_bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16 (the scalar and SIMD paths passed)";
  // The dot kernel's rows: the same bits, padded with zeros to whole zmm.
  const int64_t cols = count / 3, stride = bf16dot::row_values(cols);
  std::vector<uint16_t> prepared(static_cast<size_t>(3 * stride), 0xffff);
  bf16dot::prepare_rows(values.data(), 0, 3, cols, prepared.data());
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t c = 0; c < stride; ++c)
      ASSERT_EQ(prepared[t * stride + c], c < cols ? want[t * cols + c] : 0) << "token " << t << " column " << c;
}

// One row of `blocks` k-quant super-blocks whose codes, scales (and mins) are all the same:
// the extremes the integer kernels' bounds are written for (simd_kernels.cpp, KActBlock).
std::vector<std::byte> uniform_kquant_row(WeightType type, int64_t blocks, uint8_t code_byte, int8_t q6_scale) {
  std::vector<std::byte> row(weight_row_bytes(type, blocks * kSuperBlock));
  for (int64_t b = 0; b < blocks; ++b) {
    std::byte* p = row.data() + b * traits(type).block_bytes;
    if (type == WeightType::Q6_K) {
      auto& k = *reinterpret_cast<BlockQ6_K*>(p);
      std::memset(k.low, code_byte, sizeof(k.low));
      std::memset(k.high, code_byte, sizeof(k.high));
      std::memset(k.scales, static_cast<uint8_t>(q6_scale), sizeof(k.scales));
      k.scale = f32_to_f16(1.0f);
    } else if (type == WeightType::Q5_K) {
      auto& k = *reinterpret_cast<BlockQ5_K*>(p);
      std::memset(k.scales, 0xff, sizeof(k.scales));  // every 6-bit scale and min 63
      std::memset(k.q, code_byte, sizeof(k.q));
      std::memset(k.high_bits, code_byte, sizeof(k.high_bits));
      k.scale = f32_to_f16(1.0f);
      k.min_scale = f32_to_f16(0.5f);
    } else {
      auto& k = *reinterpret_cast<BlockQ4_K*>(p);
      std::memset(k.scales, 0xff, sizeof(k.scales));
      std::memset(k.q, code_byte, sizeof(k.q));
      k.scale = f32_to_f16(1.0f);
      k.min_scale = f32_to_f16(0.5f);
    }
  }
  return row;
}

// q4_K, q5_K and q6_K at the edges of their integer bounds: the largest codes with the largest
// scales of either sign against activations that all quantize to +-2047, where the kernels'
// partial int32 sums wrap and only the totals fit (q6_K: 63 x -128 x -2047 summed over 256
// values is past 2^31; with the codes' excess of 32 taken off it is 2.08e9). Then prefill
// across its blocks of 64 rows and 64 tokens against decode, bit for bit.
TEST_F(SimdTargets, KQuantKernelsAtTheirBoundsAndAcrossPrefillBlocks) {
  ThreadPool pool(2);
  std::mt19937 rng(11);
  for_each_target([&] {
    for (WeightType type : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
      SCOPED_TRACE(weight_type_name(type));
      const int64_t blocks = 3, cols = blocks * kSuperBlock, n = 5;
      for (uint8_t code_byte : {uint8_t{0x00}, uint8_t{0xff}}) {
        for (int8_t q6_scale : {int8_t{-128}, int8_t{127}}) {
          for (float sign : {-1.0f, 1.0f}) {
            const auto bytes = uniform_kquant_row(type, blocks, code_byte, q6_scale);
            const WeightMatrix w{type, bytes.data(), 1, cols, bytes.size()};
            const std::vector<float> x(static_cast<size_t>(n * cols), sign);
            std::vector<float> expect(static_cast<size_t>(n)), got(expect.size()), one(1);
            ReferenceKernels().matmul(w, kernel_activations(w, x).data(), n, nullptr, expect.data());
            CpuKernels fast(pool, features_);
            fast.matmul(w, x.data(), n, nullptr, got.data());
            fast.matmul(w, x.data(), 1, nullptr, one.data());
            for (int64_t t = 0; t < n; ++t) {
              ASSERT_NEAR(got[t], expect[t], 1e-6 * std::fabs(expect[t]) + 1e-3)
                  << "codes " << int{code_byte} << " scale " << int{q6_scale} << " sign " << sign;
              ASSERT_EQ(got[t], one[0]);
            }
          }
        }
      }
      // 70 rows (a group of 64, then 6: one quad and 2 single rows), 67 tokens (a block of 64,
      // then 3).
      const int64_t rows = 70, big_n = 67;
      Matrix m = make_matrix(type, rows, 2 * kSuperBlock, rng);
      const auto x = randn(static_cast<size_t>(big_n * m.w.cols), rng);
      std::vector<float> batched(static_cast<size_t>(big_n * rows)), expect(batched.size());
      CpuKernels(pool, features_).matmul(m.w, x.data(), big_n, nullptr, batched.data());
      ReferenceKernels().matmul(m.w, kernel_activations(m.w, x).data(), big_n, nullptr, expect.data());
      for (int64_t t = 0; t < big_n; ++t) {
        std::vector<float> alone(static_cast<size_t>(rows));
        CpuKernels(pool, features_).matmul(m.w, &x[t * m.w.cols], 1, nullptr, alone.data());
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(alone[r], batched[t * rows + r]) << "token " << t << " row " << r;
          ASSERT_NEAR(batched[t * rows + r], expect[t * rows + r], 1e-4 * (1 + std::fabs(expect[t * rows + r])));
        }
      }
    }
  });
}

// The VNNI kernels (int8: vpdpbusd; k-quants: vpdpwssd) compute every block's integer dot
// exactly as the others and then take the same float steps: their results are bit-identical,
// on the AVX-512 target and on the AVX2 target (AVX-VNNI's encoding, or AVX512-VNNI's on ymm
// where the CPU has that).
TEST_F(SimdTargets, VnniKernelsAreBitIdenticalToTheOthers) {
  const CpuFeatures all = CpuFeatures::detect();
  if (!all.avx512_vnni && !all.avx2_vnni) GTEST_SKIP() << "this CPU has neither AVX512-VNNI nor AVX-VNNI";
  std::mt19937 rng(9);
  ThreadPool pool(2);
  int targets = 0;
  for (int64_t target : simd::available_targets()) {
    simd::force_target(target);
    const std::string name = simd::name_of_target(target);
    if (!(name.rfind("AVX3", 0) == 0 ? all.avx512_vnni : name == "AVX2" && all.avx2_vnni)) continue;
    ++targets;
    CpuKernels with(pool, all), without(pool, CpuFeatures{});
    ASSERT_TRUE(with.simd_path().ends_with(" + VNNI")) << with.simd_path();
    for (WeightType type : {WeightType::Q8_0, WeightType::Q4_0, WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1,
                            WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
      for (int64_t n : {1, 2, 3, 4, 5, 8, 9, 23}) {
        const int64_t rows = 45, cols = traits(type).block_values == kSuperBlock ? 512 : 160;
        // Both layouts: interleaved or in lanes (as laid out at load) and row-major (a GGUF's own
        // q8_0 / q4_0 rows).
        for (const Matrix& m : layouts(make_matrix(type, rows, cols, rng))) {
          const auto x = randn(static_cast<size_t>(n * cols), rng);
          const auto bias = randn(static_cast<size_t>(rows), rng);
          std::vector<float> a(static_cast<size_t>(n * rows)), b(a.size());
          with.matmul(m.w, x.data(), n, bias.data(), a.data());
          without.matmul(m.w, x.data(), n, bias.data(), b.data());
          ASSERT_EQ(a, b) << name << " " << layout_name(m.w) << " n " << n << " " << with.matmul_path(m.w, n);
        }
      }
    }
  }
  simd::force_target(0);
  EXPECT_GT(targets, 0);
}

TEST_F(SimdTargets, MatmulMultiAndGateUpMatchSeparateCalls) {
  std::mt19937 rng(3);
  ThreadPool pool(2);
  for_each_target([&] {
    for (WeightType type : {WeightType::BF16, WeightType::Q8_0, WeightType::Q4_0, WeightType::Q4_K, WeightType::Q6_K}) {
      SCOPED_TRACE(weight_type_name(type));
      const int64_t cols = traits(type).block_values == kSuperBlock ? 256 : 64, n = 5;
      // q8_0 and q4_0 interleaved: 9-row matrices put the group boundaries of the
      // concatenated row range off the thread split's grain.
      auto make = [&](int64_t rows) {
        Matrix m = make_matrix(type, rows, cols, rng);
        if (interleavable(type)) return interleaved(m);
        return m;  // moved: the vector keeps its buffer, so w.data stays valid
      };
      Matrix a = make(40), b = make(9), c = make(9);
      const auto x = randn(static_cast<size_t>(n * cols), rng);
      const auto bias = randn(40, rng);
      CpuKernels k(pool, features_);
      std::vector<float> ya(n * 40), yb(n * 9), yc(n * 9), ea(ya.size()), eb(yb.size()), ec(yc.size());
      const MatmulOutput outs[3] = {{&a.w, bias.data(), ya.data()}, {&b.w, nullptr, yb.data()}, {&c.w, nullptr, yc.data()}};
      k.matmul_multi(outs, 3, x.data(), n);
      k.matmul(a.w, x.data(), n, bias.data(), ea.data());
      k.matmul(b.w, x.data(), n, nullptr, eb.data());
      k.matmul(c.w, x.data(), n, nullptr, ec.data());
      EXPECT_EQ(ya, ea);
      EXPECT_EQ(yb, eb);
      EXPECT_EQ(yc, ec);
      std::vector<float> fused(n * 9), expect(n * 9);
      k.mlp_gate_up(b.w, c.w, x.data(), n, fused.data());
      ReferenceKernels().silu_mul(eb.data(), ec.data(), n * 9, expect.data());
      for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], expect[i], 1e-5 * (1 + std::fabs(expect[i])));
    }
  });
}

TEST_F(SimdTargets, ElementwiseKernelsMatchReference) {
  std::mt19937 rng(4);
  ThreadPool pool(2);
  for_each_target([&] {
    ReferenceKernels ref;
    CpuKernels fast(pool, features_);
    for (int64_t dim : {1, 7, 8, 33, 64, 896}) {
      for (int64_t n : {1, 3, 20}) {
        const auto x = randn(static_cast<size_t>(n * dim), rng, 3.0f);
        const auto w = randn(static_cast<size_t>(dim), rng);
        std::vector<float> a(x.size()), b(x.size());
        ref.rmsnorm(x.data(), w.data(), n, dim, 1e-6f, a.data());
        fast.rmsnorm(x.data(), w.data(), n, dim, 1e-6f, b.data());
        for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(b[i], a[i], 1e-5 * (1 + std::fabs(a[i]))) << "rmsnorm " << dim;
        const auto u = randn(x.size(), rng);
        ref.silu_mul(x.data(), u.data(), n * dim, a.data());
        fast.silu_mul(x.data(), u.data(), n * dim, b.data());
        for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(b[i], a[i], 1e-5 * (1 + std::fabs(a[i]))) << "silu " << dim;
        a = x;
        b = x;
        ref.add(a.data(), u.data(), n * dim);
        fast.add(b.data(), u.data(), n * dim);
        ASSERT_EQ(a, b);
      }
    }
    for (int64_t head_dim : {2, 8, 64, 72, 128}) {
      const int64_t n = 5, heads = 3, half = head_dim / 2;
      const auto x = randn(static_cast<size_t>(n * heads * head_dim), rng);
      std::vector<float> cos(n * half), sin(n * half);
      for (size_t i = 0; i < cos.size(); ++i) {
        cos[i] = std::cos(0.37f * static_cast<float>(i));
        sin[i] = std::sin(0.37f * static_cast<float>(i));
      }
      auto a = x, b = x;
      ref.rope(a.data(), n, heads, head_dim, cos.data(), sin.data());
      fast.rope(b.data(), n, heads, head_dim, cos.data(), sin.data());
      for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(b[i], a[i], 1e-5) << "rope " << head_dim;
    }
  });
}

TEST_F(SimdTargets, AttentionMatchesReference) {
  std::mt19937 rng(5);
  ThreadPool pool(2), one(1), five(5);
  for_each_target([&] {
    for (KVType kv : {KVType::F32, KVType::F16, KVType::BF16}) {
      for (int64_t head_dim : {8, 64, 72}) {
        for (auto [heads, kv_heads] : {std::pair<int64_t, int64_t>{4, 2}, {6, 1}, {3, 3}, {14, 2}}) {
          const int64_t block_size = 16, n = 6, kv_dim = kv_heads * head_dim;
          const std::vector<int64_t> lengths = {1, 5, 16, 17, 40, 100};
          const int64_t blocks = 8;  // enough for 100 positions, in a shuffled order
          std::vector<int32_t> table = {3, 0, 6, 1, 7, 2, 5, 4};
          const size_t esz = kv_type_size(kv);
          const size_t block_stride = static_cast<size_t>(2 * block_size * kv_dim) * esz;
          std::vector<std::byte> arena(block_stride * blocks);
          ReferenceKernels ref;
          for (int64_t b = 0; b < blocks; ++b)
            for (int64_t j = 0; j < 2 * block_size; ++j) {
              const auto vals = randn(static_cast<size_t>(kv_dim), rng);
              store_kv_row(kv, vals.data(), kv_dim, arena.data() + b * block_stride + j * kv_dim * esz);
            }
          std::vector<AttentionRow> rows(n);
          for (int64_t t = 0; t < n; ++t) rows[t] = {table.data(), lengths[t]};
          const auto q = randn(static_cast<size_t>(n * heads * head_dim), rng);
          AttentionArgs a;
          a.q = q.data();
          a.n = n;
          a.heads = heads;
          a.kv_heads = kv_heads;
          a.head_dim = head_dim;
          a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
          a.kv_type = kv;
          a.k_base = arena.data();
          a.v_base = arena.data() + static_cast<size_t>(block_size * kv_dim) * esz;
          a.block_stride = block_stride;
          a.block_size = block_size;
          a.rows = rows.data();
          std::vector<float> expect(q.size()), got(q.size());
          a.out = expect.data();
          ref.attention(a);
          a.out = got.data();
          CpuKernels(pool, features_).attention(a);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], expect[i], 2e-5) << kv_type_name(kv) << " head_dim " << head_dim << " element " << i;
          // However many threads (and so however the query heads of a group are split
          // into tasks), and whatever else is in the batch, each row is the same.
          for (ThreadPool* other : {&one, &five}) {
            std::vector<float> again(q.size());
            a.out = again.data();
            CpuKernels(*other, features_).attention(a);
            ASSERT_EQ(again, got) << other->size() << " threads";
          }
          // Each token alone, as decoding runs it: the rows of one sequence share tasks
          // (simd::AttentionTile) in the batch, and that changes no bit of any of them.
          for (int64_t t = 0; t < n; ++t) {
            AttentionArgs one_row = a;
            one_row.n = 1;
            one_row.q = q.data() + t * heads * head_dim;
            one_row.rows = rows.data() + t;
            std::vector<float> alone(static_cast<size_t>(heads * head_dim));
            one_row.out = alone.data();
            CpuKernels(pool, features_).attention(one_row);
            ASSERT_TRUE(std::equal(alone.begin(), alone.end(), got.begin() + t * heads * head_dim)) << "row " << t << " alone";
          }
        }
      }
    }
  });
}

TEST(ThreadPool, ParallelForCoversTheRangeOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 7, 64, 1000}) {
      std::vector<int> hits(static_cast<size_t>(n));
      pool.parallel_for(n, 8, [&](int64_t b, int64_t e) {
        EXPECT_TRUE(b % 8 == 0);
        for (int64_t i = b; i < e; ++i) ++hits[i];
      });
      for (int h : hits) ASSERT_EQ(h, 1);
    }
    for (int rep = 0; rep < 1000; ++rep) {  // many short jobs in a row
      std::atomic<int> ran{0};
      pool.run([&](int) { ran.fetch_add(1); });
      ASSERT_EQ(ran.load(), threads);
    }
  }
}

}  // namespace
}  // namespace glass
