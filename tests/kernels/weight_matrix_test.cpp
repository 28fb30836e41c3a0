#include "kernels/weight_matrix.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/simd_kernels.h"
#include "quant/weight_type.h"
#include "support/test_support.h"

namespace glass {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<float> round_trip(WeightType t, const std::vector<float>& in) {
  const auto cols = static_cast<int64_t>(in.size());
  std::vector<std::byte> buf(weight_row_bytes(t, cols));
  quantize_row(t, in.data(), cols, buf.data());
  WeightMatrix w{t, buf.data(), 1, cols, buf.size()};
  std::vector<float> out(in.size());
  dequantize_row(w, 0, out.data());
  return out;
}

TEST(WeightMatrix, RoundHalfAwayIsRoundf) {
  std::vector<float> values = {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, 126.5f, -127.5f, 127.0f, 0.49999997f,
                               -0.49999997f, 0.50000006f, 1e-30f, -1e-30f};
  for (float v = -130.0f; v <= 130.0f; v += 0.0625f) values.push_back(v);
  for (float v : random_values(100000, 9, 60.0f)) values.push_back(v);
  for (float v : values) {
    const float halfway = std::floor(v) + 0.5f;  // and its neighbours
    for (float u : {v, halfway, std::nextafter(halfway, 1e9f), std::nextafter(halfway, -1e9f)})
      ASSERT_EQ(round_half_away(u), static_cast<int32_t>(std::roundf(u))) << u;
  }
}

// The vectorized q8_0 / q4_0 quantizers write the scalar codecs' bytes on every SIMD target
// this CPU runs, for blocks of random values, exact halves, ties for the largest
// magnitude, zeros of both signs, subnormals, and NaN or infinity.
TEST(WeightMatrix, VectorizedQuantizersGiveTheScalarBytes) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 9), pick(0, 31), small(-16, 16);
  for (int64_t blocks : {1, 2, 3, 7, 37}) {
    std::vector<float> x(static_cast<size_t>(blocks * 32));
    for (int trial = 0; trial < 40; ++trial) {
      for (int64_t b = 0; b < blocks; ++b) {
        float* v = x.data() + b * 32;
        const int k = kind(rng);
        for (int j = 0; j < 32; ++j) {
          switch (k) {
            case 0: v[j] = static_cast<float>(small(rng)) * 0.5f; break;  // halves: exact ties after scaling
            case 1: v[j] = (j % 2 ? -0.0f : 0.0f); break;
            case 2: v[j] = normal(rng) * 1e-39f; break;  // subnormal: the scale's inverse overflows
            default: v[j] = normal(rng) * (k == 3 ? 1e4f : 1.0f);
          }
        }
        if (k == 4) v[pick(rng)] = -v[pick(rng)];      // a tie for the largest magnitude, either sign
        if (k == 5) v[pick(rng)] = std::nanf("");
        if (k == 6) v[pick(rng)] = -INFINITY;
        if (k == 7) v[pick(rng)] = 127.0f, v[pick(rng)] = -127.0f;
      }
      for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
        const size_t bytes = static_cast<size_t>(blocks) * traits(t).block_bytes;
        std::vector<std::byte> scalar(bytes), fast(bytes);
        traits(t).quantize(x.data(), scalar.data(), blocks);
        for (int64_t target : simd::available_targets()) {
          simd::force_target(target);
          std::fill(fast.begin(), fast.end(), std::byte{0xAA});
          ASSERT_TRUE(simd::quantize_blocks(t, x.data(), fast.data(), blocks));
          ASSERT_EQ(std::memcmp(fast.data(), scalar.data(), bytes), 0)
              << weight_type_name(t) << " on " << simd::name_of_target(target) << ", " << blocks << " blocks, trial " << trial;
        }
        simd::force_target(0);
      }
    }
  }
  std::vector<float> x(256, 1.0f);
  std::vector<std::byte> out(256);
  EXPECT_FALSE(simd::quantize_blocks(WeightType::Q5_0, x.data(), out.data(), 1));
}

// The k-quant searches run one sub-block per lane; every lane must make the scalar search's
// choices, so each 16-value region of a super-block gets its own kind of data: ties,
// zeros, flat and all-negative runs, subnormal and huge values (whose squares overflow),
// NaN and infinity (those super-blocks go to the scalar codec), over block counts that
// leave lanes unused.
TEST(WeightMatrix, VectorizedKQuantQuantizersGiveTheScalarBytes) {
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 13), pick(0, 15), small(-16, 16);
  for (int64_t blocks : {1, 2, 3, 9, 17}) {
    std::vector<float> x(static_cast<size_t>(blocks * 256));
    for (int trial = 0; trial < 12; ++trial) {
      for (size_t r = 0; r < x.size(); r += 16) {
        float* v = x.data() + r;
        const int k = kind(rng);
        const float level = normal(rng);
        for (int j = 0; j < 16; ++j) {
          switch (k) {
            case 0: v[j] = static_cast<float>(small(rng)) * 0.25f; break;  // ties after scaling
            case 1: v[j] = (j % 2 ? -0.0f : 0.0f); break;
            case 2: v[j] = normal(rng) * 1e-39f; break;                     // subnormal
            case 3: v[j] = normal(rng) * 1e20f; break;                      // x * x overflows
            case 4: v[j] = level; break;                                    // flat
            case 5: v[j] = -std::fabs(normal(rng)) - 1.0f; break;           // all negative
            case 6: v[j] = std::fabs(normal(rng)) + 1.0f; break;            // all positive
            case 7: v[j] = normal(rng) * 1e-16f; break;                     // under ggml's group epsilon
            default: v[j] = normal(rng) * (k == 8 ? 1e4f : 1.0f);
          }
        }
        if (k == 9) v[pick(rng)] = -v[pick(rng)];  // a tie for the largest magnitude, either sign
        if (k == 10 && trial % 3 == 0) v[pick(rng)] = std::nanf("");
        if (k == 11 && trial % 3 == 0) v[pick(rng)] = -INFINITY;
      }
      for (WeightType t : {WeightType::Q2_K, WeightType::Q3_K, WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
        const size_t bytes = static_cast<size_t>(blocks) * traits(t).block_bytes;
        std::vector<std::byte> scalar(bytes), fast(bytes);
        traits(t).quantize(x.data(), scalar.data(), blocks);
        for (int64_t target : simd::available_targets()) {
          simd::force_target(target);
          std::fill(fast.begin(), fast.end(), std::byte{0xAA});
          ASSERT_TRUE(simd::quantize_blocks(t, x.data(), fast.data(), blocks));
          for (size_t i = 0; i < bytes; ++i)
            ASSERT_EQ(fast[i], scalar[i]) << weight_type_name(t) << " on " << simd::name_of_target(target) << ", "
                                          << blocks << " blocks, trial " << trial << ", byte " << i << " (block "
                                          << i / traits(t).block_bytes << ")";
        }
        simd::force_target(0);
        // quantize_row, which conversion calls, takes the same path for a row of them.
        std::vector<std::byte> row(bytes);
        quantize_row(t, x.data(), blocks * 256, row.data());
        ASSERT_EQ(std::memcmp(row.data(), scalar.data(), bytes), 0) << weight_type_name(t);
      }
    }
  }
}

// bf16 / f16 widened by the SIMD path as the scalar codecs widen them, on every target,
// for every 16-bit pattern (NaNs only need to stay NaN) and odd lengths.
TEST(WeightMatrix, VectorizedWideningGivesTheScalarFloats) {
  std::vector<uint16_t> all(65536 + 13);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  for (WeightType t : {WeightType::BF16, WeightType::F16}) {
    for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{33}, static_cast<int64_t>(all.size())}) {
      const auto* src = reinterpret_cast<const std::byte*>(all.data());
      std::vector<float> scalar(static_cast<size_t>(count)), fast(static_cast<size_t>(count));
      dequantize_values(t, src, scalar.data(), count);
      for (int64_t target : simd::available_targets()) {
        simd::force_target(target);
        ASSERT_TRUE(simd::widen_to_float(t, src, fast.data(), count));
        for (int64_t i = 0; i < count; ++i) {
          const bool same = std::isnan(scalar[i]) ? std::isnan(fast[i])
                                                  : std::bit_cast<uint32_t>(scalar[i]) == std::bit_cast<uint32_t>(fast[i]);
          ASSERT_TRUE(same) << weight_type_name(t) << " on " << simd::name_of_target(target) << ": pattern " << all[i];
        }
      }
      simd::force_target(0);
    }
  }
  float out = 0;
  EXPECT_FALSE(simd::widen_to_float(WeightType::F32, nullptr, &out, 0));
}

// The VmFlags of the mapping that holds `address`, from /proc/self/smaps ("" if none does).
std::string vm_flags_at(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(WeightMatrix, AlignedBytesStartOnALineAndAskForHugePages) {
  for (const size_t bytes : {size_t{1}, size_t{4097}, size_t{9} << 20}) {
    std::unique_ptr<std::byte[]> storage;
    std::byte* const at = aligned_bytes(storage, bytes);
    const auto address = reinterpret_cast<uintptr_t>(at);
    EXPECT_EQ(address % 64, 0u) << bytes;
    EXPECT_GE(at, storage.get());
    EXPECT_LE(at + bytes, storage.get() + bytes + 64);
    std::memset(at, 1, bytes);  // every byte is the caller's
    if (bytes < (size_t{4} << 20)) continue;
    if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
      GTEST_SKIP() << "this kernel has no transparent huge pages";
    // 9 MiB holds at least 3 whole 2 MiB pages, each advised (VmFlags "hg"), whatever the
    // system's transparent huge page setting.
    const uintptr_t huge = uintptr_t{2} << 20;
    const uintptr_t inside = (address + huge - 1) / huge * huge + huge;
    const std::string flags = vm_flags_at(inside);
    if (flags.empty()) GTEST_SKIP() << "/proc/self/smaps shows no VmFlags for the buffer here";
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  }
}

TEST(WeightMatrix, RowBytes) {
  EXPECT_EQ(weight_row_bytes(WeightType::F32, 64), 256u);
  EXPECT_EQ(weight_row_bytes(WeightType::BF16, 64), 128u);
  EXPECT_EQ(weight_row_bytes(WeightType::Q8_0, 64), 68u);
  EXPECT_EQ(weight_row_bytes(WeightType::Q4_0, 64), 36u);
}

TEST(WeightMatrix, TypeNames) {
  WeightType t;
  for (const char* n : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
    ASSERT_TRUE(parse_weight_type(n, &t)) << n;
    EXPECT_STREQ(weight_type_name(t), n);
  }
  ASSERT_TRUE(parse_weight_type("Q4_k", &t));
  EXPECT_EQ(t, WeightType::Q4_K);
  EXPECT_STREQ(weight_type_name(t), "q4_K");
  EXPECT_FALSE(parse_weight_type("q4_kk", &t));
  EXPECT_FALSE(parse_weight_type("iq2_xxs", &t));
}

struct QuantizedMatrix {
  std::vector<std::byte> bytes;
  WeightMatrix w;
};

QuantizedMatrix quantized(WeightType t, int64_t rows, int64_t cols, uint32_t seed) {
  QuantizedMatrix m;
  const size_t row_bytes = weight_row_bytes(t, cols);
  m.bytes.resize(row_bytes * static_cast<size_t>(rows));
  const auto values = random_values(static_cast<size_t>(rows * cols), seed);
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, &values[r * cols], cols, m.bytes.data() + r * row_bytes);
  m.w = {t, m.bytes.data(), rows, cols, row_bytes};
  return m;
}

TEST(WeightMatrix, InterleavedLayoutHoldsTheSameValues) {
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
    for (int64_t rows : {1, 8, 13, 17, 24}) {
      for (int64_t cols : {32, 96}) {
        SCOPED_TRACE(std::string(weight_type_name(t)) + " rows " + std::to_string(rows) + " cols " +
                     std::to_string(cols));
        const QuantizedMatrix m = quantized(t, rows, cols, static_cast<uint32_t>(rows * cols));
        std::vector<std::byte> out(m.bytes.size());
        const WeightMatrix iw = interleave_rows(m.w, out.data());
        EXPECT_TRUE(iw.interleaved);
        EXPECT_EQ(iw.interleaved_rows(), rows / 8 * 8);
        EXPECT_EQ(iw.bytes(), m.w.bytes());
        std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
        for (int64_t r = 0; r < rows; ++r) {
          dequantize_row(m.w, r, a.data());
          dequantize_row(iw, r, b.data());
          ASSERT_EQ(a, b) << "row " << r;
        }
      }
    }
  }
}

TEST(WeightMatrix, InterleavedBytesAreWhereTheHeaderSays) {
  // Row 3, block 1 of group 0: its scale is the 4th of the block's 8. q8_0 value 5 is
  // in slice 1 (values 4..7) at byte 4 * 3 + 1. q4_0 value 1 is the low nibble of slice
  // 0's byte 4 * 3 + 1 and value 5 its high nibble; value 13 is slice 1's high nibble
  // there, value 17 slice 2's low nibble.
  const QuantizedMatrix q8 = quantized(WeightType::Q8_0, 8, 64, 7);
  std::vector<std::byte> out8(q8.bytes.size());
  const WeightMatrix i8 = interleave_rows(q8.w, out8.data());
  const auto& src8 = reinterpret_cast<const BlockQ8_0*>(q8.w.row(3))[1];
  const std::byte* blk8 = i8.group_block(0, 1);
  uint16_t scale;
  std::memcpy(&scale, blk8 + 2 * 3, 2);
  EXPECT_EQ(scale, src8.scale);
  EXPECT_EQ(static_cast<int8_t>(blk8[16 + 32 * 1 + 4 * 3 + 1]), src8.q[5]);

  const QuantizedMatrix q4 = quantized(WeightType::Q4_0, 8, 64, 8);
  std::vector<std::byte> out4(q4.bytes.size());
  const WeightMatrix i4 = interleave_rows(q4.w, out4.data());
  const auto& src4 = reinterpret_cast<const BlockQ4_0*>(q4.w.row(3))[1];
  const auto* quants = reinterpret_cast<const uint8_t*>(i4.group_block(0, 1) + 16);
  EXPECT_EQ(quants[0 * 32 + 4 * 3 + 1] & 0x0f, src4.q[1] & 0x0f);          // value 1
  EXPECT_EQ(quants[0 * 32 + 4 * 3 + 1] >> 4, src4.q[5] & 0x0f);            // value 5
  EXPECT_EQ(quants[1 * 32 + 4 * 3 + 1] >> 4, src4.q[13] & 0x0f);           // value 13
  EXPECT_EQ(quants[2 * 32 + 4 * 3 + 1] & 0x0f, src4.q[1] >> 4);            // value 17
}

TEST(WeightMatrix, InterleavingNeedsARowMajorBlockMatrix) {
  std::vector<std::byte> buf(weight_row_bytes(WeightType::BF16, 32) * 8), out(buf.size());
  const WeightMatrix w{WeightType::BF16, buf.data(), 8, 32, weight_row_bytes(WeightType::BF16, 32)};
  EXPECT_NE(test::thrown_error([&] { interleave_rows(w, out.data()); }).find("q8_0 or q4_0"), std::string::npos);
}

// The lane layout holds the row-major bytes rearranged: laid out and back gives them again,
// and dequantize_row reads the same values from either; for q4_1, q5_0 and q5_1 whole groups of
// 16 blocks, a row's last group of 1 to 15, and rows of fewer than 16 blocks; for the k-quants
// rows of 1, 3 and 19 super-blocks.
TEST(WeightMatrix, LaneLayoutHoldsTheSameBytes) {
  for (WeightType t : {WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1, WeightType::Q4_K, WeightType::Q5_K,
                       WeightType::Q6_K}) {
    const bool kquant = traits(t).block_values == kSuperBlock;
    for (int64_t cols : kquant ? std::vector<int64_t>{256, 768, 4864} : std::vector<int64_t>{32, 96, 480, 512, 544, 896, 1056}) {
      SCOPED_TRACE(std::string(weight_type_name(t)) + " cols " + std::to_string(cols));
      const QuantizedMatrix m = quantized(t, 3, cols, static_cast<uint32_t>(cols));
      std::vector<std::byte> out(m.bytes.size()), back(m.bytes.size());
      const WeightMatrix lw = lane_block_rows(m.w, out.data());
      EXPECT_TRUE(lw.block_lanes);
      EXPECT_EQ(lw.bytes(), m.w.bytes());
      std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
      for (int64_t r = 0; r < 3; ++r) {
        unlane_block_row(t, cols, lw.row(r), back.data() + r * m.w.row_bytes);
        dequantize_row(m.w, r, a.data());
        dequantize_row(lw, r, b.data());
        ASSERT_EQ(a, b) << "row " << r;
      }
      EXPECT_EQ(back, m.bytes);
      if (kquant || cols >= 512) {  // a group of fewer than 16 blocks may keep its order
        EXPECT_NE(out, m.bytes);
      }
    }
  }
}

TEST(WeightMatrix, KQuantLaneLayoutMovesEveryBit) {
  // Random bytes: every bit of a k-quant super-block is a scale's or a code's, so the layout
  // and back must give each byte again, and one code bit flipped must move one bit.
  std::mt19937 rng(5);
  for (WeightType t : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    SCOPED_TRACE(weight_type_name(t));
    const size_t bytes = traits(t).block_bytes;
    std::vector<std::byte> in(2 * bytes), laid(in.size()), back(in.size());
    for (auto& b : in) b = std::byte{static_cast<uint8_t>(rng())};
    lane_block_row(t, 2 * kSuperBlock, in.data(), laid.data());
    unlane_block_row(t, 2 * kSuperBlock, laid.data(), back.data());
    EXPECT_EQ(back, in);
    auto bits = [](const std::vector<std::byte>& v) {
      int n = 0;
      for (std::byte b : v) n += std::popcount(static_cast<uint8_t>(b));
      return n;
    };
    EXPECT_EQ(bits(laid), bits(in));
  }
}

// A row-major k-quant block's code of value v (0..63 for q6_K, before the 32 comes off), as
// ggml lays the blocks out (quant/blocks.h).
int row_major_code(WeightType t, const std::byte* block, int v) {
  if (t == WeightType::Q6_K) {
    const auto& b = *reinterpret_cast<const BlockQ6_K*>(block);
    const int h = v / 128, k = (v % 128) / 32, l = v % 32;
    const int low = b.low[64 * h + 32 * (k % 2) + l];
    return (k >= 2 ? low >> 4 : low & 15) | (((b.high[32 * h + l] >> (2 * k)) & 3) << 4);
  }
  const uint8_t* q = t == WeightType::Q4_K ? reinterpret_cast<const BlockQ4_K*>(block)->q : reinterpret_cast<const BlockQ5_K*>(block)->q;
  const int byte = q[32 * (v / 64) + v % 32];
  int code = v % 64 < 32 ? byte & 15 : byte >> 4;
  if (t == WeightType::Q5_K) code |= ((reinterpret_cast<const BlockQ5_K*>(block)->high_bits[v % 32] >> (v / 32)) & 1) << 4;
  return code;
}

TEST(WeightMatrix, KQuantLaneBytesAreWhereTheHeaderSays) {
  std::mt19937 rng(6);
  for (WeightType t : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    SCOPED_TRACE(weight_type_name(t));
    std::vector<std::byte> in(traits(t).block_bytes), laid(in.size());
    for (auto& b : in) b = std::byte{static_cast<uint8_t>(rng())};
    lane_block_row(t, kSuperBlock, in.data(), laid.data());
    const size_t low = t == WeightType::Q4_K ? offsetof(BlockQ4_K, q) : t == WeightType::Q5_K ? offsetof(BlockQ5_K, q) : 0;
    const auto* l = reinterpret_cast<const uint8_t*>(laid.data());
    for (int p = 0; p < 256; ++p) {
      const int k = p / 64, j = (p % 64) / 4, b = p % 4;
      const int v = kquant_lane_value(p);
      ASSERT_EQ(v, 16 * j + 4 * k + b);
      int code = (l[low + 64 * (k / 2) + 4 * j + b] >> (4 * (k % 2))) & 15;
      if (t == WeightType::Q5_K) code |= ((l[offsetof(BlockQ5_K, high_bits) + p / 8] >> (p % 8)) & 1) << 4;
      if (t == WeightType::Q6_K) code |= ((l[offsetof(BlockQ6_K, high) + 4 * j + b] >> (2 * k)) & 3) << 4;
      ASSERT_EQ(code, row_major_code(t, in.data(), v)) << "position " << p;
    }
    // The scales stay where they are.
    if (t == WeightType::Q6_K) {
      EXPECT_EQ(std::memcmp(l + offsetof(BlockQ6_K, scales), reinterpret_cast<const uint8_t*>(in.data()) + offsetof(BlockQ6_K, scales), 18), 0);
    } else {
      EXPECT_EQ(std::memcmp(l, in.data(), 16), 0);
    }
  }
}

TEST(WeightMatrix, LaneBytesAreWhereTheHeaderSays) {
  // A row of 17 blocks: group 0 of 16, group 1 of 1. In group 0, block 3's value 21 (the high
  // nibble of its byte 5) is in nibble vector 1 (bytes 4..7 of each block) at byte 4 * 3 + 1,
  // and its fifth bit is bit 4 * 3 + 1 of mask 5 (values 20..23).
  const QuantizedMatrix q = quantized(WeightType::Q5_1, 1, 17 * 32, 3);
  std::vector<std::byte> out(q.bytes.size());
  const WeightMatrix lw = lane_block_rows(q.w, out.data());
  const auto& src = reinterpret_cast<const BlockQ5_1*>(q.w.row(0))[3];
  const auto* g = reinterpret_cast<const uint8_t*>(lw.row(0));
  uint16_t h;
  std::memcpy(&h, g + 2 * 3, 2);
  EXPECT_EQ(h, src.scale);
  std::memcpy(&h, g + 32 + 2 * 3, 2);
  EXPECT_EQ(h, src.min);
  const uint8_t* masks = g + 64;
  const uint8_t* nibbles = masks + 64;
  EXPECT_EQ(nibbles[64 * 1 + 4 * 3 + 1], src.q[5]);
  uint32_t high;
  std::memcpy(&high, src.high_bits, 4);
  const int bit = 5 * 64 + 4 * 3 + 1;
  EXPECT_EQ((masks[bit / 8] >> (bit % 8)) & 1, (high >> 21) & 1);
  // Group 1 (block 16 alone) sits where block 16 did: scale, min, 4 bytes of masks, nibbles.
  const auto& last = reinterpret_cast<const BlockQ5_1*>(q.w.row(0))[16];
  const uint8_t* g1 = g + 16 * sizeof(BlockQ5_1);
  std::memcpy(&h, g1, 2);
  EXPECT_EQ(h, last.scale);
  EXPECT_EQ(std::memcmp(g1 + 8, last.q, 16), 0);
}

TEST(WeightMatrix, LaneLayoutNeedsARowMajorQ4_1OrQ5Matrix) {
  const QuantizedMatrix q = quantized(WeightType::Q4_0, 2, 64, 1);
  std::vector<std::byte> out(q.bytes.size());
  EXPECT_NE(test::thrown_error([&] { lane_block_rows(q.w, out.data()); }).find("q4_1, q5_0, q5_1, q4_K, q5_K or q6_K"), std::string::npos);
  const QuantizedMatrix q5 = quantized(WeightType::Q5_0, 2, 64, 1);
  std::vector<std::byte> laid(q5.bytes.size()), again(q5.bytes.size());
  const WeightMatrix lw = lane_block_rows(q5.w, laid.data());
  EXPECT_NE(test::thrown_error([&] { lane_block_rows(lw, again.data()); }).find("row-major"), std::string::npos);
}

TEST(WeightMatrix, FloatFormatsRoundTrip) {
  const auto in = random_values(96, 1);
  EXPECT_EQ(round_trip(WeightType::F32, in), in);
  const auto bf = round_trip(WeightType::BF16, in);
  const auto h = round_trip(WeightType::F16, in);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(bf[i], bf16_to_f32(f32_to_bf16(in[i])));
    EXPECT_NEAR(h[i], in[i], std::fabs(in[i]) * 0x1p-11f + 1e-7f);
  }
}

TEST(WeightMatrix, Q8_0ErrorWithinHalfAStep) {
  const auto in = random_values(32 * 7, 2);
  const auto out = round_trip(WeightType::Q8_0, in);
  for (size_t b = 0; b < 7; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(in[b * 32 + j]));
    const float step = amax / 127.0f;
    for (size_t j = 0; j < 32; ++j)  // fp16 scale rounding adds a little
      EXPECT_NEAR(out[b * 32 + j], in[b * 32 + j], 0.5f * step + amax * 1e-3f) << b << "," << j;
  }
}

TEST(WeightMatrix, Q4_0MatchesLlamaCppLayout) {
  // Largest magnitude -8 gives scale 1: the values are their own nibble minus 8.
  std::vector<float> in(32);
  for (int j = 0; j < 32; ++j) in[j] = static_cast<float>((j % 16) - 8);
  in[5] = -8.0f;
  std::vector<std::byte> buf(weight_row_bytes(WeightType::Q4_0, 32));
  quantize_row(WeightType::Q4_0, in.data(), 32, buf.data());
  const auto* block = reinterpret_cast<const BlockQ4_0*>(buf.data());
  EXPECT_EQ(f16_to_f32(block->scale), 1.0f);
  EXPECT_EQ(block->q[0] & 0x0f, 0);      // element 0 = -8 -> nibble 0
  EXPECT_EQ(block->q[0] >> 4, 0);        // element 16 = -8 -> nibble 0
  EXPECT_EQ(block->q[15] & 0x0f, 15);    // element 15 = 7 -> nibble 15
  EXPECT_EQ(round_trip(WeightType::Q4_0, in), in);
}

TEST(WeightMatrix, Q4_0ErrorWithinHalfAStep) {
  const auto in = random_values(32 * 5, 3);
  const auto out = round_trip(WeightType::Q4_0, in);
  for (size_t b = 0; b < 5; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(in[b * 32 + j]));
    // The scale maps the largest-magnitude value to -8; values of the opposite sign
    // clamp at +7, so near the far end the error reaches one whole step.
    const float step = amax / 8.0f;
    for (size_t j = 0; j < 32; ++j) {
      const float err = std::fabs(out[b * 32 + j] - in[b * 32 + j]);
      const bool clamped = std::fabs(in[b * 32 + j]) > 7.5f * step;
      EXPECT_LE(err, (clamped ? 1.0f : 0.5f) * step + amax * 1e-3f) << b << "," << j;
    }
  }
}

TEST(WeightMatrix, ZeroBlocksQuantizeToZero) {
  const std::vector<float> zeros(64, 0.0f);
  EXPECT_EQ(round_trip(WeightType::Q8_0, zeros), zeros);
  EXPECT_EQ(round_trip(WeightType::Q4_0, zeros), zeros);
}

TEST(WeightMatrix, BlockTypesRefuseRaggedRows) {
  std::vector<float> in(40, 1.0f);
  std::vector<std::byte> buf(64);
  const std::string e = test::thrown_error([&] { quantize_row(WeightType::Q8_0, in.data(), 40, buf.data()); });
  EXPECT_NE(e.find("multiple of 32"), std::string::npos) << e;
}

}  // namespace
}  // namespace glass
