// The AMX path: the tiled layout (testable everywhere), the tile kernels against the scalar
// reference on odd shapes, bit-identity of the int8 tile, VNNI and vector kernels, batch and
// thread invariance, and the fallback when the tile permission is refused or GLASS_CPU turns
// AMX off. The kernel tests run twice: on the CPU's tiles where it has AMX and Linux grants
// it (skipped with the reason elsewhere), and on the emulated tile unit
// (amx_tile_emulation.h) wherever the AVX-512 subsets around the tiles are, AMX or not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "kernels/amx_kernels.h"
#include "kernels/amx_tile_emulation.h"
#include "kernels/cpu_kernels.h"
#include "kernels/reference_kernels.h"
#include "support/test_support.h"

namespace glass::amx {
// How GoogleTest names a tile unit in a test's parameter.
inline void PrintTo(TileUnit unit, std::ostream* os) { *os << (unit == TileUnit::Hardware ? "the CPU's tiles" : "emulated tiles"); }
}  // namespace glass::amx

// Its own namespace: kernels_test is a unity build in CI, and cpu_kernels_test.cpp has
// helpers of the same names (Matrix, randn, interleaved).
namespace glass::amx_test {
namespace {

std::vector<float> randn(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A matrix with its bytes (move-only: w.data points into them).
struct Matrix {
  std::unique_ptr<std::byte[]> bytes;
  WeightMatrix w;
};

Matrix row_major(WeightType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  Matrix m;
  const size_t row_bytes = weight_row_bytes(t, cols);
  m.bytes = std::make_unique<std::byte[]>(row_bytes * static_cast<size_t>(rows));
  const auto values = randn(static_cast<size_t>(rows * cols), rng, 0.5f);
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, &values[r * cols], cols, m.bytes.get() + r * row_bytes);
  m.w = {t, m.bytes.get(), rows, cols, row_bytes};
  return m;
}

Matrix tiled(const WeightMatrix& w) {
  Matrix m;
  m.bytes = std::make_unique<std::byte[]>(tiled_bytes(w.type, w.rows, w.cols));
  m.w = tile_rows(w, m.bytes.get());
  return m;
}

Matrix interleaved(const WeightMatrix& w) {
  Matrix m;
  m.bytes = std::make_unique<std::byte[]>(w.bytes());
  m.w = interleave_rows(w, m.bytes.get());
  return m;
}

// What the int8 kernels multiply: per block of 32, values times 127 / amax rounded to even,
// the scale amax / 127 rounded to f16 (ggml's quantize_row_q8_0).
std::vector<float> int8_activations(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float id = amax != 0 ? 127.0f / amax : 0.0f, d = f16_to_f32(f32_to_f16(amax / 127.0f));
    for (int j = 0; j < 32; ++j) out[b * 32 + j] = std::nearbyint(x[b * 32 + j] * id) * d;
  }
  return out;
}

std::vector<float> matmul(Kernels& k, const WeightMatrix& w, const std::vector<float>& x, int64_t n,
                          const float* bias = nullptr) {
  std::vector<float> y(static_cast<size_t>(n * w.rows));
  k.matmul(w, x.data(), n, bias, y.data());
  return y;
}

const std::vector<WeightType> kTileable = {WeightType::BF16, WeightType::Q8_0, WeightType::Q4_0};

// ---------------------------------------------------------------- layout (every machine)

TEST(TiledLayout, HoldsTheValuesOfTheRowMajorMatrix) {
  std::mt19937 rng(1);
  for (WeightType t : kTileable) {
    const bool blocks = t != WeightType::BF16;
    for (int64_t rows : {1, 15, 16, 17, 40}) {
      for (int64_t cols : blocks ? std::vector<int64_t>{32, 96, 160} : std::vector<int64_t>{1, 31, 32, 33, 100}) {
        SCOPED_TRACE(std::string(weight_type_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
        const Matrix m = row_major(t, rows, cols, rng);
        std::vector<Matrix> sources;
        sources.push_back(tiled(m.w));
        if (blocks && rows >= kInterleaveRows) sources.push_back(tiled(interleaved(m.w).w));  // from the other layout
        for (const Matrix& s : sources) {
          EXPECT_TRUE(s.w.tiled);
          const int64_t per = blocks ? kQuantBlock : kTileChunk;
          EXPECT_EQ(s.w.bytes(), static_cast<size_t>((rows + 15) / 16 * ((cols + per - 1) / per)) * tiled_block_bytes(t));
          std::vector<float> expect(static_cast<size_t>(cols)), got(expect.size());
          for (int64_t r = 0; r < rows; ++r) {
            dequantize_row(m.w, r, expect.data());
            dequantize_row(s.w, r, got.data());
            ASSERT_EQ(got, expect) << "row " << r;
          }
        }
      }
    }
  }
}

// Where the tile instructions read each value: checked byte by byte against the layout's
// description in weight_matrix.h (a scalar model of the tile product's operands).
TEST(TiledLayout, PutsEveryValueWhereTheTileInstructionsReadIt) {
  std::mt19937 rng(2);
  const int64_t rows = 20, cols = 64;
  {
    const Matrix m = row_major(WeightType::BF16, rows, cols, rng);
    const Matrix t = tiled(m.w);
    for (int64_t r = 0; r < 32; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const std::byte* tile = tile_block(t.w, r / 16, c / 32);
        // tdpbf16ps: line k2 of the weight tile, dword i = (value 2 k2, value 2 k2 + 1) of column i.
        uint16_t v;
        std::memcpy(&v, tile + ((c % 32) / 2) * 64 + 4 * (r % 16) + 2 * (c % 2), 2);
        uint16_t expect = 0;
        if (r < rows) std::memcpy(&expect, m.w.row(r) + 2 * c, 2);
        ASSERT_EQ(v, expect) << r << "," << c;
      }
    }
  }
  for (WeightType type : {WeightType::Q8_0, WeightType::Q4_0}) {
    const Matrix m = row_major(type, rows, cols, rng);
    const Matrix t = tiled(m.w);
    std::vector<float> expect(static_cast<size_t>(cols));
    for (int64_t r = 0; r < 32; ++r) {
      if (r < rows) dequantize_row(m.w, r, expect.data());
      for (int64_t b = 0; b < cols / 32; ++b) {
        uint16_t scale;
        std::memcpy(&scale, tile_scales(t.w, r / 16, b) + 2 * (r % 16), 2);
        const auto* q = reinterpret_cast<const uint8_t*>(tile_block(t.w, r / 16, b));
        for (int k = 0; k < 32; ++k) {
          // tdpbssd: line k / 4 of the weight tile, byte 4 i + k % 4 for column i.
          int32_t v;
          if (type == WeightType::Q8_0) {
            v = static_cast<int8_t>(q[(k / 4) * 64 + 4 * (r % 16) + k % 4]);
          } else {
            const uint8_t byte = q[(k / 8) * 64 + 4 * (r % 16) + k % 4];
            v = (k % 8 >= 4 ? byte >> 4 : byte & 0x0f) - 8;
          }
          const float value = static_cast<float>(v) * f16_to_f32(scale);
          if (r < rows) ASSERT_EQ(value, expect[b * 32 + k]) << weight_type_name(type) << " " << r << "," << k;
          else ASSERT_EQ(v, 0) << "padding row " << r;
        }
      }
    }
  }
}

TEST(TiledLayout, RefusesWhatItCannotTile) {
  std::mt19937 rng(3);
  const Matrix f32 = row_major(WeightType::F32, 4, 8, rng);
  std::vector<std::byte> out(1 << 12);
  EXPECT_THROW(tile_rows(f32.w, out.data()), Error);
  const Matrix bf16 = row_major(WeightType::BF16, 4, 8, rng);
  const Matrix t = tiled(bf16.w);
  EXPECT_THROW(tile_rows(t.w, out.data()), Error);
  EXPECT_THROW(interleave_rows(t.w, out.data()), Error);
}

// ---------------------------------------------------------------- path selection (every machine)

bool refuse(std::string* reason) {
  *reason = "refused by the test";
  return false;
}
bool grant(std::string*) { return true; }

TEST(CpuPath, GlassCpuChoosesAPathAndRefusesNonsense) {
  int64_t disabled = 0;
  EXPECT_THROW(CpuFeatures::decide("avx9", grant, &disabled), Error);
  EXPECT_THROW(CpuFeatures::decide("AMX ", grant, &disabled), Error);
  const CpuFeatures scalar = CpuFeatures::decide("scalar", grant, &disabled);
  EXPECT_FALSE(scalar.amx);
  EXPECT_FALSE(scalar.avx512_vnni);
  EXPECT_NE(disabled, 0);
  if (amx::cpu_has_amx()) {
    EXPECT_TRUE(CpuFeatures::decide("amx", grant, &disabled).amx);
    EXPECT_TRUE(CpuFeatures::decide(nullptr, grant, &disabled).amx);
    EXPECT_EQ(disabled, 0);
    const CpuFeatures avx512 = CpuFeatures::decide("avx512", grant, &disabled);
    EXPECT_FALSE(avx512.amx);
    EXPECT_TRUE(avx512.note.empty());
  } else {
    try {
      CpuFeatures::decide("amx", grant, &disabled);
      ADD_FAILURE() << "GLASS_CPU=amx accepted on a CPU without AMX";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("GLASS_CPU=amx"), std::string::npos) << e.what();
    }
  }
}

// GLASS_CPU=amx-emulated: the tile kernels on the emulated unit, without asking Linux for
// the tile state (no tile instruction runs), where the CPU can emulate; refused elsewhere.
TEST(CpuPath, AmxEmulatedRunsTheTileKernelsWithoutAmx) {
  int64_t disabled = 0;
  const auto ask = [](std::string*) { return false; };  // a request would be refused
  if (amx::cpu_can_emulate_tiles()) {
    const CpuFeatures f = CpuFeatures::decide("amx-emulated", ask, &disabled);
    EXPECT_TRUE(f.amx);
    EXPECT_TRUE(f.amx_emulated);
    EXPECT_TRUE(f.note.empty()) << f.note;
    EXPECT_EQ(disabled, 0);
    ThreadPool pool(2);
    CpuKernels k(pool, f);
    if (std::string(CpuKernels::simd_target()).rfind("AVX3", 0) == 0) {  // (not in a GLASS_CPU=avx2 process)
      EXPECT_NE(k.simd_path().find("AMX (emulated)"), std::string::npos) << k.simd_path();
    }
    std::mt19937 rng(13);
    const Matrix tm = tiled(row_major(WeightType::BF16, 32, 64, rng).w);
    EXPECT_EQ(k.matmul_path(tm.w, 20), "AMX-BF16 (emulated)");
    EXPECT_FALSE(k.compute_path(tm.w, 20).valid) << "no tile instruction to measure a peak of";
  } else {
    const std::string error = test::thrown_error([&] { CpuFeatures::decide("amx-emulated", ask, &disabled); });
    EXPECT_NE(error.find("GLASS_CPU=amx-emulated: this CPU does not have"), std::string::npos) << error;
  }
}

TEST(CpuPath, ARefusedPermissionFallsBackToAvx512AndSaysWhy) {
  if (!amx::cpu_has_amx()) GTEST_SKIP() << "this CPU has no AMX (the permission is only requested where it has)";
  int64_t disabled = 0;
  const CpuFeatures refused = CpuFeatures::decide(nullptr, refuse, &disabled);
  EXPECT_FALSE(refused.amx);
  EXPECT_NE(refused.note.find("refused the tile permission (refused by the test)"), std::string::npos) << refused.note;
  const CpuFeatures avx512 = CpuFeatures::decide("avx512", grant, &disabled);
  EXPECT_EQ(refused.avx512_vnni, avx512.avx512_vnni);
  // Nothing is tiled for it, and what it computes is the AVX-512 path's, bit for bit.
  std::mt19937 rng(4);
  ThreadPool pool(2);
  CpuKernels with_refusal(pool, refused), plain(pool, avx512);
  EXPECT_EQ(with_refusal.simd_path(), plain.simd_path());
  for (WeightType t : kTileable) {
    Matrix m = row_major(t, 40, 96, rng);
    std::unique_ptr<std::byte[]> storage;
    const WeightMatrix laid = cpu_layout(m.w, storage, refused);
    EXPECT_FALSE(laid.tiled);
    for (int64_t n : {1, 17}) {
      const auto x = randn(static_cast<size_t>(n * 96), rng);
      EXPECT_EQ(matmul(with_refusal, laid, x, n), matmul(plain, laid, x, n)) << weight_type_name(t);
    }
  }
}

// ---------------------------------------------------------------- the emulated tile unit (every machine)

// Tile t of a configuration: `rows` rows of `bytes` bytes.
void set_tile(amx::TileConfig& c, int t, uint8_t rows, uint16_t bytes) {
  c.rows[t] = rows;
  c.colsb[t] = bytes;
}

// tdpbf16ps on small integers, whose products and sums are exact in fp32: the result is the
// manual's sum exactly, added to what the accumulator held.
TEST(EmulatedTiles, Bf16ProductsAreTheManualsSums) {
  std::mt19937 rng(30);
  std::uniform_int_distribution<int> small(-16, 16);
  amx::TileConfig c;
  set_tile(c, 0, 3, 40);  // C: 3 rows of 10 fp32
  set_tile(c, 4, 3, 24);  // A: 3 rows of 12 bf16 (6 pairs)
  set_tile(c, 6, 6, 40);  // B: 6 rows of 10 pairs
  uint16_t a[3][12], b[6][20];
  float start[3][10], got[3][10];
  for (auto& row : a)
    for (auto& v : row) v = f32_to_bf16(static_cast<float>(small(rng)));
  for (auto& row : b)
    for (auto& v : row) v = f32_to_bf16(static_cast<float>(small(rng)));
  for (auto& row : start)
    for (auto& v : row) v = static_cast<float>(small(rng));
  amx::EmulatedTiles unit;
  unit.config(&c);
  unit.load<0>(start, sizeof start[0]);
  unit.load<4>(a, sizeof a[0]);
  unit.load<6>(b, sizeof b[0]);
  unit.dpbf16ps<0, 4, 6>();
  unit.store<0>(got, sizeof got[0]);
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 10; ++n) {
      double expect = start[m][n];
      for (int k = 0; k < 12; ++k) expect += double{bf16_to_f32(a[m][k])} * bf16_to_f32(b[k / 2][2 * n + k % 2]);
      ASSERT_EQ(got[m][n], expect) << m << "," << n;
    }
}

// Denormal bf16 inputs read as zero, denormal results are flushed to zero.
TEST(EmulatedTiles, Bf16DenormalsAreZero) {
  amx::TileConfig c;
  set_tile(c, 0, 1, 4);
  set_tile(c, 1, 1, 4);
  set_tile(c, 2, 1, 4);
  amx::EmulatedTiles unit;
  unit.config(&c);
  const float zero = 0.0f;
  float got = 1.0f;
  // 2^-133 (a denormal) times 2^127: 2^-6 if it were read.
  const uint16_t denormal_pair[2] = {0x0001, 0}, large_pair[2] = {f32_to_bf16(0x1p127f), 0};
  unit.load<0>(&zero, 4);
  unit.load<1>(denormal_pair, 4);
  unit.load<2>(large_pair, 4);
  unit.dpbf16ps<0, 1, 2>();
  unit.store<0>(&got, 4);
  EXPECT_EQ(got, 0.0f);
  // 2^-70 times 2^-70: 2^-140, a denormal fp32 result.
  const uint16_t tiny_pair[2] = {f32_to_bf16(0x1p-70f), 0};
  got = 1.0f;
  unit.load<1>(tiny_pair, 4);
  unit.load<2>(tiny_pair, 4);
  unit.dpbf16ps<0, 1, 2>();
  unit.store<0>(&got, 4);
  EXPECT_EQ(got, 0.0f);
}

// tdpbssd: signed bytes in quads, int32 sums wrapping around as the CPU's do.
TEST(EmulatedTiles, Int8ProductsWrapAround) {
  std::mt19937 rng(31);
  std::uniform_int_distribution<int> byte(-128, 127);
  const amx::TileConfig c = amx::make_config(16, 32, 8);  // what the int8 kernels load
  int8_t a[16][32], b[8][64];
  int32_t start[16][16], got[16][16];
  for (auto& row : a)
    for (auto& v : row) v = static_cast<int8_t>(byte(rng));
  for (auto& row : b)
    for (auto& v : row) v = static_cast<int8_t>(byte(rng));
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n)  // near the ends of int32, so that the sums wrap
      start[m][n] = m % 2 ? std::numeric_limits<int32_t>::max() - n : std::numeric_limits<int32_t>::min() + n;
  amx::EmulatedTiles unit;
  unit.config(&c);
  unit.load<1>(start, 64);
  unit.load<5>(a, 32);
  unit.load<7>(b, 64);
  unit.dpbssd<1, 5, 7>();
  unit.store<1>(got, 64);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      int64_t dot = 0;
      for (int k = 0; k < 32; ++k) dot += int64_t{a[m][k]} * b[k / 4][4 * n + k % 4];
      ASSERT_EQ(got[m][n], static_cast<int32_t>(static_cast<uint32_t>(start[m][n]) + static_cast<uint32_t>(dot)))
          << m << "," << n;
    }
}

// A load reads the configured rows and bytes of each row (what lies past them stays unread: a
// tile narrower than its buffer's stride), a store writes them and nothing else.
TEST(EmulatedTiles, LoadsAndStoresTouchTheConfiguredBytesOnly) {
  amx::TileConfig c;
  set_tile(c, 3, 2, 8);
  amx::EmulatedTiles unit;
  unit.config(&c);
  unsigned char src[2][100], dst[4][32];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 100; ++i) src[r][i] = static_cast<unsigned char>(r * 100 + i);
  std::memset(dst, 0xab, sizeof dst);
  unit.load<3>(src, 100);
  unit.store<3>(dst, 32);
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 32; ++i)
      ASSERT_EQ(dst[r][i], r < 2 && i < 8 ? src[r][i] : 0xab) << r << "," << i;
  unit.zero<3>();
  unit.store<3>(dst, 32);
  EXPECT_EQ(dst[1][7], 0);
  EXPECT_EQ(dst[1][8], 0xab);
}

// What the CPU faults on (#UD) throws, naming the instruction.
TEST(EmulatedTiles, FaultsWhereTheCpuWould) {
  auto expect_fault = [](const std::function<void()>& f, const char* what) {
    const std::string error = test::thrown_error(f);
    EXPECT_NE(error.find(what), std::string::npos) << "expected a fault naming \"" << what << "\", got: " << error;
  };
  amx::EmulatedTiles unit;
  float buffer[16 * 16] = {};
  expect_fault([&] { unit.zero<0>(); }, "tilezero tmm0: no tile configuration");
  amx::TileConfig bad;
  set_tile(bad, 2, 17, 64);
  expect_fault([&] { unit.config(&bad); }, "tile 2 configured as 17 rows");
  amx::TileConfig odd;
  odd.palette = 2;
  expect_fault([&] { unit.config(&odd); }, "palette 2");
  amx::TileConfig c = amx::make_config(16, 32, 8);  // tiles 0-7 set
  c.rows[3] = 0, c.colsb[3] = 0;
  unit.config(&c);
  expect_fault([&] { unit.load<3>(buffer, 64); }, "tileloadd tmm3: the tile is not configured");
  // A has 32 bytes (8 dword columns) but B 16 rows.
  amx::TileConfig mismatch = amx::make_config(16, 32, 16);
  unit.config(&mismatch);
  expect_fault([&] { unit.dpbf16ps<0, 4, 6>(); }, "do not chain");
  expect_fault([&] { unit.dpbssd<0, 0, 6>(); }, "must differ");
  unit.config(&c);
  unit.dpbssd<0, 4, 6>();  // chains
  unit.release();
  expect_fault([&] { unit.store<0>(buffer, 64); }, "tilestored tmm0: no tile configuration");
}

// ---------------------------------------------------------------- kernels (the CPU's tiles, and emulated)

class AmxKernels : public ::testing::TestWithParam<amx::TileUnit> {
 protected:
  void SetUp() override {
    features_ = CpuFeatures::detect();
    features_.amx_int8 = true;  // (the default) these tests cover the int8 tiles too
    if (GetParam() == amx::TileUnit::Emulated) {
      if (!amx::cpu_can_emulate_tiles())
        GTEST_SKIP() << "this CPU lacks the AVX-512 subsets the code around the tiles uses (F, BW, VL, DQ, VNNI, BF16)";
      if (std::string(CpuKernels::simd_target()).rfind("AVX3", 0) != 0)
        GTEST_SKIP() << "GLASS_CPU chose a path below AVX-512 for this process";
      features_.amx = true;
      features_.amx_emulated = true;
      return;
    }
    if (!amx::cpu_has_amx()) GTEST_SKIP() << "this CPU has no AMX (AMX-TILE/INT8/BF16 with AVX512-BF16 and VNNI)";
    if (!features_.amx)
      GTEST_SKIP() << "AMX is off in this process: " << (features_.note.empty() ? "GLASS_CPU" : features_.note);
  }
  CpuFeatures features_;
};

INSTANTIATE_TEST_SUITE_P(TileUnits, AmxKernels, ::testing::Values(amx::TileUnit::Hardware, amx::TileUnit::Emulated),
                         [](const ::testing::TestParamInfo<amx::TileUnit>& info) {
                           return info.param == amx::TileUnit::Hardware ? "Hardware" : "Emulated";
                         });

TEST_P(AmxKernels, TilesMatchTheReferenceOnOddShapes) {
  std::mt19937 rng(5);
  ThreadPool pool(2);
  CpuKernels fast(pool, features_);
  ReferenceKernels ref;
  for (WeightType t : kTileable) {
    const bool blocks = t != WeightType::BF16;
    for (int64_t cols : blocks ? std::vector<int64_t>{32, 64, 96, 160} : std::vector<int64_t>{7, 32, 33, 64, 100, 200}) {
      for (int64_t rows : {1, 5, 16, 17, 33, 40}) {
        const Matrix m = row_major(t, rows, cols, rng);
        const Matrix tm = tiled(m.w);
        const auto bias = randn(static_cast<size_t>(rows), rng);
        for (int64_t n : {1, 2, 15, 16, 17, 33}) {
          SCOPED_TRACE(std::string(weight_type_name(t)) + " rows " + std::to_string(rows) + " cols " +
                       std::to_string(cols) + " n " + std::to_string(n) + " via " + fast.matmul_path(tm.w, n));
          const auto x = randn(static_cast<size_t>(n * cols), rng);
          const auto expect = matmul(ref, m.w, blocks ? int8_activations(x) : x, n, bias.data());
          const auto got = matmul(fast, tm.w, x, n, bias.data());
          for (size_t i = 0; i < got.size(); ++i) {
            // float32 accumulation in another order than the reference's double (bf16: the
            // activations' three bf16 parts hold every bit of the float)
            const double tol = 2e-6 * std::sqrt(static_cast<double>(cols)) * (1.0 + std::fabs(expect[i])) + 1e-6;
            ASSERT_NEAR(got[i], expect[i], tol) << "element " << i;
          }
        }
      }
    }
  }
}

// One float sequence for every int8 kernel: the tiles, the VNNI kernel on the tiled layout,
// and the vector kernels (with and without VNNI) on the 8-row interleaved layout.
TEST_P(AmxKernels, Int8TilesAreBitIdenticalToTheVectorKernels) {
  std::mt19937 rng(6);
  ThreadPool pool(2);
  CpuFeatures no_amx = features_, always_tiles = features_;
  no_amx.amx = false;
  always_tiles.int8_tile_min_tokens = 1;  // the tiles for every token count, one included
  CpuKernels tiles(pool, always_tiles), vnni(pool, no_amx), plain(pool, CpuFeatures{});
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0}) {
    for (int64_t rows : {8, 40, 64}) {  // whole groups of 8: the vector kernels' interleaved layout
      const Matrix m = row_major(t, rows, 160, rng);
      const Matrix tm = tiled(m.w), im = interleaved(m.w);
      const auto bias = randn(static_cast<size_t>(rows), rng);
      for (int64_t n : {1, 2, 7, 8, 15, 16, 17, 33, 70}) {
        SCOPED_TRACE(std::string(weight_type_name(t)) + " rows " + std::to_string(rows) + " n " + std::to_string(n));
        const auto x = randn(static_cast<size_t>(n * 160), rng);
        for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
          const auto expect = matmul(plain, im.w, x, n, b);
          ASSERT_EQ(matmul(tiles, tm.w, x, n, b), expect) << tiles.matmul_path(tm.w, n);
          ASSERT_EQ(matmul(vnni, tm.w, x, n, b), expect) << vnni.matmul_path(tm.w, n);
          ASSERT_EQ(matmul(vnni, im.w, x, n, b), expect) << "the AVX-512 VNNI kernel on the interleaved layout";
        }
      }
    }
  }
}

TEST_P(AmxKernels, TilesAreBatchAndThreadInvariant) {
  std::mt19937 rng(7);
  ThreadPool one(1), two(2), three(3);
  for (WeightType t : kTileable) {
    const int64_t rows = 70, cols = 96, n = 37;  // 70 rows: four whole groups and a partial one
    const Matrix tm = tiled(row_major(t, rows, cols, rng).w);
    const auto x = randn(static_cast<size_t>(n * cols), rng);
    const auto bias = randn(static_cast<size_t>(rows), rng);
    CpuKernels reference_split(two, features_);
    const auto batched = matmul(reference_split, tm.w, x, n, bias.data());
    for (ThreadPool* pool : {&one, &two, &three}) {
      CpuKernels k(*pool, features_);
      ASSERT_EQ(matmul(k, tm.w, x, n, bias.data()), batched) << weight_type_name(t) << " " << pool->size() << " threads";
      for (int64_t i = 0; i < n; ++i) {
        const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);
        const auto alone = matmul(k, tm.w, xi, 1, bias.data());
        ASSERT_TRUE(std::equal(alone.begin(), alone.end(), batched.begin() + i * rows))
            << weight_type_name(t) << " token " << i << " alone, " << pool->size() << " threads";
      }
      for (int64_t start : {3, 17}) {  // sub-batches around the tile and threshold sizes
        for (int64_t count : {9, 16, 20}) {
          const std::vector<float> xs(x.begin() + start * cols, x.begin() + (start + count) * cols);
          const auto sub = matmul(k, tm.w, xs, count, bias.data());
          ASSERT_TRUE(std::equal(sub.begin(), sub.end(), batched.begin() + start * rows))
              << weight_type_name(t) << " tokens " << start << ".." << start + count;
        }
      }
    }
  }
}

// In the bf16 matmul precision the activations are rounded to bf16 and multiplied as one
// part: as close to the reference that rounds them as the float mode is to its own, the same
// bits as three parts of activations rounded beforehand (their lower parts are zero, and
// adding zero products changes nothing), and invariant like every kernel.
TEST_P(AmxKernels, Bf16ActivationsTakeOnePart) {
  std::mt19937 rng(12);
  ThreadPool one(1), two(2), three(3);
  CpuKernels one_part(two, features_, MatmulPrecision::Bf16), three_parts(two, features_);
  ReferenceKernels ref(MatmulPrecision::Bf16);
  int64_t moved = 0;
  for (int64_t cols : {7, 33, 100, 200}) {
    for (int64_t rows : {1, 17, 40}) {
      const Matrix m = row_major(WeightType::BF16, rows, cols, rng);
      const Matrix tm = tiled(m.w);
      const auto bias = randn(static_cast<size_t>(rows), rng);
      for (int64_t n : {1, 2, 16, 17, 33}) {
        SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " n " + std::to_string(n) +
                     " via " + one_part.matmul_path(tm.w, n));
        EXPECT_EQ(one_part.compute_path(tm.w, n).passes, 1);
        EXPECT_EQ(three_parts.compute_path(tm.w, n).passes, amx::kBf16Parts);
        const auto x = randn(static_cast<size_t>(n * cols), rng);
        std::vector<float> rounded(x.size());
        for (size_t i = 0; i < x.size(); ++i) rounded[i] = bf16_to_f32(f32_to_bf16_flushed(x[i]));
        const auto got = matmul(one_part, tm.w, x, n, bias.data());
        ASSERT_EQ(got, matmul(three_parts, tm.w, rounded, n, bias.data()));
        const auto expect = matmul(ref, m.w, x, n, bias.data());
        const auto unrounded = matmul(three_parts, tm.w, x, n, bias.data());
        for (size_t i = 0; i < got.size(); ++i) {
          const double tol = 2e-6 * std::sqrt(static_cast<double>(cols)) * (1.0 + std::fabs(expect[i])) + 1e-6;
          ASSERT_NEAR(got[i], expect[i], tol) << "element " << i;
          moved += got[i] != unrounded[i];
        }
      }
    }
  }
  EXPECT_GT(moved, 1000) << "the rounding moved too few results: is the mode on?";
  const int64_t rows = 70, cols = 96, n = 37;
  const Matrix tm = tiled(row_major(WeightType::BF16, rows, cols, rng).w);
  const auto x = randn(static_cast<size_t>(n * cols), rng);
  const auto batched = matmul(one_part, tm.w, x, n);
  for (ThreadPool* pool : {&one, &three}) {
    CpuKernels k(*pool, features_, MatmulPrecision::Bf16);
    ASSERT_EQ(matmul(k, tm.w, x, n), batched) << pool->size() << " threads";
    for (int64_t i : {int64_t{0}, int64_t{16}, n - 1}) {
      const std::vector<float> xi(x.begin() + i * cols, x.begin() + (i + 1) * cols);
      const auto alone = matmul(k, tm.w, xi, 1);
      ASSERT_TRUE(std::equal(alone.begin(), alone.end(), batched.begin() + i * rows)) << "token " << i << " alone";
    }
  }
}

TEST_P(AmxKernels, MultiAndGateUpMatchSeparateCalls) {
  std::mt19937 rng(8);
  ThreadPool pool(2);
  CpuKernels k(pool, features_);
  for (WeightType t : kTileable) {
    SCOPED_TRACE(weight_type_name(t));
    const int64_t cols = 64;
    // 40 + 9 + 9 rows: the outputs' group boundaries fall off the thread split's grain.
    const Matrix a = tiled(row_major(t, 40, cols, rng).w), b = tiled(row_major(t, 9, cols, rng).w),
                 c = tiled(row_major(t, 9, cols, rng).w);
    for (int64_t n : {1, 5, 33}) {
      const auto x = randn(static_cast<size_t>(n * cols), rng);
      const auto bias = randn(40, rng);
      std::vector<float> ya(n * 40), yb(n * 9), yc(n * 9);
      const MatmulOutput outs[3] = {{&a.w, bias.data(), ya.data()}, {&b.w, nullptr, yb.data()}, {&c.w, nullptr, yc.data()}};
      k.matmul_multi(outs, 3, x.data(), n);
      EXPECT_EQ(ya, matmul(k, a.w, x, n, bias.data()));
      const auto eb = matmul(k, b.w, x, n), ec = matmul(k, c.w, x, n);
      EXPECT_EQ(yb, eb);
      EXPECT_EQ(yc, ec);
      std::vector<float> fused(n * 9), expect(n * 9);
      k.mlp_gate_up(b.w, c.w, x.data(), n, fused.data());
      ReferenceKernels().silu_mul(eb.data(), ec.data(), n * 9, expect.data());
      for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], expect[i], 1e-5 * (1 + std::fabs(expect[i])));
    }
  }
}

// q4_K, q5_K and q6_K rows as a GGUF holds them, through the tiles (their sums exact, the
// float steps the vector kernels'): the vector kernels' bits, with and without VNNI, for any
// rows, tokens and thread split, on weights quantized from floats, on random block bytes (every
// code and scale, q6_K's -128 among them) and on blocks whose dots come within 2^20 of the
// int32 range the kernels' integers are proven to stay in.
TEST_P(AmxKernels, KQuantTilesAreBitIdenticalToTheVectorKernels) {
  std::mt19937 rng(13);
  ThreadPool one(1), three(3);
  CpuFeatures no_amx = features_, always_tiles = features_;
  no_amx.amx = false;
  always_tiles.int8_tile_min_tokens = 1;  // the tiles for every token count, one included
  const uint16_t small_scale = f32_to_f16(0.01f), unit_scale = f32_to_f16(1.0f);
  // Blocks of random bytes, their fp16 scales made finite and small.
  auto random_blocks = [&](WeightType t, int64_t rows, int64_t cols) {
    Matrix m = row_major(t, rows, cols, rng);
    auto* bytes = reinterpret_cast<uint8_t*>(m.bytes.get());
    std::uniform_int_distribution<int> byte(0, 255);
    for (size_t i = 0; i < m.w.bytes(); ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < cols / kSuperBlock; ++b) {
        std::byte* block = m.bytes.get() + r * m.w.row_bytes + b * weight_row_bytes(t, kSuperBlock);
        if (t == WeightType::Q6_K) {
          reinterpret_cast<BlockQ6_K*>(block)->scale = small_scale;
        } else {  // the first two fields of Q4_K and Q5_K: scale, min_scale
          auto* h = reinterpret_cast<uint16_t*>(block);
          h[0] = small_scale;
          h[1] = small_scale;
        }
      }
    }
    return m;
  };
  // Blocks at the kernels' bound: q4_K / q5_K every scale, min and code at its largest (met by
  // activations of 1: X = 2047), q6_K every scale -128 and code 0 (value -32, met by -1).
  auto extreme_blocks = [&](WeightType t, int64_t rows, int64_t cols) {
    Matrix m = random_blocks(t, rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < cols / kSuperBlock; ++b) {
        std::byte* block = m.bytes.get() + r * m.w.row_bytes + b * weight_row_bytes(t, kSuperBlock);
        if (t == WeightType::Q6_K) {
          auto& q = *reinterpret_cast<BlockQ6_K*>(block);
          std::memset(q.low, 0, sizeof q.low);
          std::memset(q.high, 0, sizeof q.high);
          std::memset(q.scales, 0x80, sizeof q.scales);
          q.scale = unit_scale;
        } else {
          std::memset(block, 0xff, weight_row_bytes(t, kSuperBlock));
          auto* h = reinterpret_cast<uint16_t*>(block);
          h[0] = unit_scale;
          h[1] = unit_scale;
        }
      }
    }
    return m;
  };
  for (WeightType t : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    for (int kind = 0; kind < 3; ++kind) {
      for (int64_t rows : {1, 19, 40}) {
        const int64_t cols = kind == 0 ? 768 : 512;
        const Matrix m = kind == 0 ? row_major(t, rows, cols, rng) : kind == 1 ? random_blocks(t, rows, cols)
                                                                               : extreme_blocks(t, rows, cols);
        const auto bias = randn(static_cast<size_t>(rows), rng);
        for (int64_t n : {1, 12, 16, 17, 33}) {
          SCOPED_TRACE(std::string(weight_type_name(t)) + (kind == 0 ? " quantized" : kind == 1 ? " random bytes" : " extreme") +
                       " rows " + std::to_string(rows) + " n " + std::to_string(n));
          auto x = randn(static_cast<size_t>(n * cols), rng);
          if (kind == 2) std::fill(x.begin(), x.end(), t == WeightType::Q6_K ? -1.0f : 1.0f);
          for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
            CpuKernels plain(three, CpuFeatures{});
            const auto expect = matmul(plain, m.w, x, n, b);
            for (ThreadPool* pool : {&one, &three}) {
              CpuKernels tiles(*pool, always_tiles), vnni(*pool, no_amx);
              ASSERT_EQ(tiles.matmul_path(m.w, n).rfind("AMX-INT8", 0), 0u) << tiles.matmul_path(m.w, n);
              EXPECT_EQ(tiles.compute_path(m.w, n).instruction, ComputeInstruction::TileInt8);
              EXPECT_EQ(tiles.compute_path(m.w, n).passes, 4) << "four tile products per multiply-add";
              ASSERT_EQ(matmul(tiles, m.w, x, n, b), expect) << pool->size() << " threads";
              ASSERT_EQ(matmul(vnni, m.w, x, n, b), expect) << vnni.matmul_path(m.w, n);
            }
          }
          if (kind == 2) {  // every value d sc q - dmin m (q6_K: d sc (q - 32)) times x, 256 of them a super-block
            CpuKernels tiles(three, always_tiles);
            const double value = t == WeightType::Q4_K ? 63 * 15 - 63 : t == WeightType::Q5_K ? 63 * 31 - 63 : 4096;
            const double expect_each = static_cast<double>(cols) * value * x[0];
            for (float y : matmul(tiles, m.w, x, n, nullptr)) ASSERT_NEAR(y, expect_each, 1e-5 * std::fabs(expect_each));
          }
        }
      }
    }
  }
  // Under a target whose activations are not in lane order (forced, as the SimdTargets tests
  // do), the tiles put them in it: the same bits.
  const Matrix m = row_major(WeightType::Q4_K, 19, 768, rng);
  const auto x = randn(static_cast<size_t>(16 * 768), rng);
  CpuKernels plain(three, CpuFeatures{}), tiles(three, always_tiles);
  const auto expect = matmul(plain, m.w, x, 16, nullptr);
  for (int64_t target : simd::available_targets()) {
    simd::force_target(target);
    SCOPED_TRACE(simd::name_of_target(target));
    EXPECT_EQ(matmul(tiles, m.w, x, 16, nullptr), expect);
  }
  simd::force_target(0);
}

// A tiled matrix under kernels without AMX (a test, or a permission lost after loading) still
// gives the right results: the VNNI kernel for int8, rows decoded to f32 for bf16.
TEST_P(AmxKernels, TiledMatricesRunWithoutTiles) {
  std::mt19937 rng(9);
  ThreadPool pool(2);
  CpuFeatures no_amx = features_;
  no_amx.amx = false;
  for (const CpuFeatures& f : {no_amx, CpuFeatures{}}) {
    CpuKernels k(pool, f);
    ReferenceKernels ref;
    for (WeightType t : kTileable) {
      const Matrix m = row_major(t, 33, 96, rng);
      const Matrix tm = tiled(m.w);
      const auto x = randn(static_cast<size_t>(5 * 96), rng);
      // Rows decoded to f32 meet the activations as they are; the VNNI kernel quantizes them.
      const bool decoded = k.matmul_path(tm.w, 5).find("decoded") != std::string::npos;
      const auto expect = matmul(ref, m.w, t == WeightType::BF16 || decoded ? x : int8_activations(x), 5);
      const auto got = matmul(k, tm.w, x, 5);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], expect[i], 2e-5 * (1 + std::fabs(expect[i]))) << k.matmul_path(tm.w, 5);
    }
  }
}

TEST_P(AmxKernels, ModelWeightsAreLaidOutForTheTiles) {
  std::mt19937 rng(10);
  for (WeightType t : kTileable) {
    // Matrices of whole tiles are tiled; others keep their layout (no padding to hold).
    const Matrix odd = row_major(t, 24, 64, rng);
    EXPECT_EQ(cpu_layout_differs(odd.w, features_), interleavable(t));
    Matrix m = row_major(t, 32, 64, rng);
    EXPECT_TRUE(cpu_layout_differs(m.w, features_));
    std::unique_ptr<std::byte[]> storage = std::move(m.bytes);
    const WeightMatrix laid = cpu_layout(m.w, storage, features_);
    EXPECT_TRUE(laid.tiled);
    EXPECT_GE(laid.data, storage.get());  // inside it, on a cache line
    EXPECT_LT(laid.data, storage.get() + 64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(laid.data) % 64, 0u);
    EXPECT_FALSE(cpu_layout_differs(laid, features_));
    // Back to what kernels without AMX read.
    const WeightMatrix back = cpu_layout(laid, storage, CpuFeatures{});
    EXPECT_FALSE(back.tiled);
    EXPECT_EQ(back.interleaved, interleavable(t));
  }
}

// Attention with tiles: against the reference on odd head sizes, every KV type, GQA groups,
// two sequences (two block tables) in one batch and long contexts; every row the same alone,
// in any sub-batch and with any number of threads.
TEST_P(AmxKernels, AttentionTilesMatchTheReferenceAndAreInvariant) {
  std::mt19937 rng(11);
  ThreadPool one(1), two(2), three(3);
  ReferenceKernels ref;
  struct Shape {
    int64_t heads, kv_heads, head_dim;
  };
  for (KVType kv : {KVType::F32, KVType::F16, KVType::BF16}) {
    for (Shape shape : {Shape{4, 2, 16}, Shape{14, 2, 64}, Shape{6, 1, 72}, Shape{4, 4, 128}, Shape{8, 2, 32}}) {
      const int64_t block_size = 16, kv_dim = shape.kv_heads * shape.head_dim;
      // Sequence A: 300 positions in shuffled blocks, its last 37 tokens in the batch; sequence
      // B: 20 positions, its last 3 tokens.
      const int64_t blocks = 24;
      std::vector<int32_t> table_a(19), table_b = {20, 23};
      for (int32_t b = 0; b < 19; ++b) table_a[b] = (b * 7) % 19;
      const size_t esz = kv_type_size(kv);
      const size_t block_stride = static_cast<size_t>(2 * block_size * kv_dim) * esz;
      std::vector<std::byte> arena(block_stride * blocks);
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t j = 0; j < 2 * block_size; ++j) {
          const auto vals = randn(static_cast<size_t>(kv_dim), rng);
          store_kv_row(kv, vals.data(), kv_dim, arena.data() + b * block_stride + j * kv_dim * esz);
        }
      std::vector<AttentionRow> rows;
      for (int64_t t = 0; t < 37; ++t) rows.push_back({table_a.data(), 300 - 36 + t});
      for (int64_t t = 0; t < 3; ++t) rows.push_back({table_b.data(), 18 + t});
      const auto n = static_cast<int64_t>(rows.size());
      const auto q = randn(static_cast<size_t>(n * shape.heads * shape.head_dim), rng);
      AttentionArgs a;
      a.q = q.data();
      a.n = n;
      a.heads = shape.heads;
      a.kv_heads = shape.kv_heads;
      a.head_dim = shape.head_dim;
      a.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
      a.kv_type = kv;
      a.k_base = arena.data();
      a.v_base = arena.data() + static_cast<size_t>(block_size * kv_dim) * esz;
      a.block_stride = block_stride;
      a.block_size = block_size;
      a.rows = rows.data();
      SCOPED_TRACE(std::string(kv_type_name(kv)) + " heads " + std::to_string(shape.heads) + "/" +
                   std::to_string(shape.kv_heads) + " head_dim " + std::to_string(shape.head_dim));
      std::vector<float> expect(q.size()), got(q.size());
      a.out = expect.data();
      ref.attention(a);
      a.out = got.data();
      CpuKernels(two, features_).attention(a);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expect[i], 2e-5) << "element " << i;
      for (ThreadPool* pool : {&one, &three}) {
        std::vector<float> again(q.size());
        a.out = again.data();
        CpuKernels(*pool, features_).attention(a);
        ASSERT_EQ(again, got) << pool->size() << " threads";
      }
      const int64_t row_floats = shape.heads * shape.head_dim;
      for (int64_t t : {int64_t{0}, int64_t{17}, n - 4, n - 1}) {  // rows alone
        AttentionArgs alone = a;
        alone.n = 1;
        alone.q = q.data() + t * row_floats;
        alone.rows = rows.data() + t;
        std::vector<float> out(static_cast<size_t>(row_floats));
        alone.out = out.data();
        CpuKernels(two, features_).attention(alone);
        ASSERT_TRUE(std::equal(out.begin(), out.end(), got.begin() + t * row_floats)) << "token " << t << " alone";
      }
      AttentionArgs sub = a;  // a sub-batch across the two sequences
      sub.n = 6;
      sub.q = q.data() + (n - 6) * row_floats;
      sub.rows = rows.data() + n - 6;
      std::vector<float> out(static_cast<size_t>(6 * row_floats));
      sub.out = out.data();
      CpuKernels(one, features_).attention(sub);
      ASSERT_TRUE(std::equal(out.begin(), out.end(), got.end() - 6 * row_floats)) << "sub-batch";
    }
  }
}

}  // namespace
}  // namespace glass::amx_test
