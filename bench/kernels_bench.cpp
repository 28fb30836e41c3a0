// Kernel micro-benchmarks (Google Benchmark) at Qwen2.5-0.5B shapes.
//   build/glass_kernel_bench --benchmark_filter=Matmul
// Items processed are multiply-adds; bytes processed are weight bytes read.
#include <benchmark/benchmark.h>

#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "kernels/reference_kernels.h"
#include "kernels/simd_kernels.h"

namespace glass {
namespace {

struct Weights {
  std::vector<std::byte> bytes;
  std::unique_ptr<std::byte[]> laid_out;
  WeightMatrix w;
  // In the layout the model loads them into for kernels with `features` (tiled with AMX);
  // `row_major` keeps q8_0 / q4_0 rows as a GGUF's own are used.
  Weights(WeightType t, int64_t rows, int64_t cols, const CpuFeatures& features, bool row_major = false)
      : Weights(t, rows, cols, row_major) {
    if (!row_major) w = cpu_layout(w, laid_out, features);
  }
  Weights(WeightType t, int64_t rows, int64_t cols, bool row_major = false) {
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.0f, 0.05f);
    std::vector<float> row(static_cast<size_t>(cols));
    const size_t rb = weight_row_bytes(t, cols);
    bytes.resize(rb * static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      for (auto& v : row) v = d(rng);
      quantize_row(t, row.data(), cols, bytes.data() + r * rb);
    }
    w = {t, bytes.data(), rows, cols, rb};
    if (interleavable(t) && rows >= kInterleaveRows && !row_major) {  // as the model converts them at load
      std::vector<std::byte> row_major = std::move(bytes);
      const WeightMatrix source{t, row_major.data(), rows, cols, rb};
      bytes.resize(row_major.size());
      w = interleave_rows(source, bytes.data());
    }
  }
};

// args: weight type, rows, cols, tokens, threads, extensions: 2 all this CPU has (AMX
// included), 1 without AMX (VNNI included), 0 none; 3 and 4: with AMX, q8_0 / q4_0 (and the
// k-quants) forced through the tiles (3) or the VNNI (vector) kernel (4) whatever the tokens;
// 5: all this CPU has, activations rounded to bf16 (MatmulPrecision::Bf16: AVX512-BF16 dot
// products for bf16); then 1 to keep q8_0 / q4_0 rows row-major, as a GGUF's own are used
void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<WeightType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), n = state.range(3);
  ThreadPool pool(static_cast<int>(state.range(4)));
  const MatmulPrecision precision = state.range(5) == 5 ? MatmulPrecision::Bf16 : MatmulPrecision::Float;
  const int64_t extensions = state.range(5) == 5 ? 2 : state.range(5);
  CpuFeatures features = extensions != 0 ? CpuFeatures::detect() : CpuFeatures{};
  if (extensions == 1) features.amx = false;
  features.amx_int8 = extensions >= 2;  // 1: neither the int8 tiles nor the tiles at all
  if (extensions == 3) features.int8_tile_min_tokens = 1;
  if (extensions == 4) features.int8_tile_min_tokens = std::numeric_limits<int64_t>::max();
  CpuKernels k(pool, features, precision);
  Weights m(type, rows, cols, features, state.range(6) != 0);
  std::vector<float> x(static_cast<size_t>(n * cols), 0.5f), y(static_cast<size_t>(n * rows));
  for (auto _ : state) {
    k.matmul(m.w, x.data(), n, nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * rows * cols * n);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(m.w.bytes()));
  state.SetLabel(std::string(weight_type_name(type)) + " " + k.matmul_path(m.w, n));
}

void MatmulShapes(benchmark::internal::Benchmark* b) {
  for (int t : {static_cast<int>(WeightType::BF16), static_cast<int>(WeightType::Q8_0), static_cast<int>(WeightType::Q4_0)}) {
    for (int threads : {1, 2}) {
      for (int extensions : {2, 1, 0}) {
        b->Args({t, 4864, 896, 1, threads, extensions, 0});    // gate/up, decode
        b->Args({t, 896, 4864, 1, threads, extensions, 0});    // down, decode
        b->Args({t, 151936, 896, 1, threads, extensions, 0});  // lm_head, decode
        b->Args({t, 4864, 896, 64, threads, extensions, 0});   // gate/up, prefill block
        b->Args({t, 896, 4864, 64, threads, extensions, 0});   // down, prefill block
        b->Args({t, 4864, 896, 512, threads, extensions, 0});  // gate/up, pp512
        b->Args({t, 896, 4864, 512, threads, extensions, 0});  // down, pp512
        b->Args({t, 896, 896, 512, threads, extensions, 0});   // q / o, pp512
      }
    }
  }
}
BENCHMARK(BM_Matmul)->Apply(MatmulShapes)->UseRealTime()->Unit(benchmark::kMicrosecond);

// bf16 at the 0.5B shapes, activations as they are (2) against rounded to bf16 (5), 2 threads.
void Bf16PrecisionShapes(benchmark::internal::Benchmark* b) {
  for (int extensions : {2, 5}) {
    b->Args({static_cast<int>(WeightType::BF16), 4864, 896, 1, 2, extensions, 0});
    b->Args({static_cast<int>(WeightType::BF16), 896, 4864, 1, 2, extensions, 0});
    b->Args({static_cast<int>(WeightType::BF16), 151936, 896, 1, 2, extensions, 0});
    b->Args({static_cast<int>(WeightType::BF16), 4864, 896, 512, 2, extensions, 0});
    b->Args({static_cast<int>(WeightType::BF16), 896, 4864, 512, 2, extensions, 0});
    b->Args({static_cast<int>(WeightType::BF16), 896, 896, 512, 2, extensions, 0});
  }
}
BENCHMARK(BM_Matmul)->Name("BM_MatmulBf16Precision")->Apply(Bf16PrecisionShapes)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Where tiles overtake the VNNI kernel for q8_0 / q4_0 (the same bits): gate/up, 1 thread.
void TileThresholdShapes(benchmark::internal::Benchmark* b) {
  for (int t : {static_cast<int>(WeightType::Q8_0), static_cast<int>(WeightType::Q4_0)})
    for (int n : {1, 2, 4, 6, 8, 12, 16, 32})
      for (int route : {3, 4}) b->Args({t, 4864, 896, n, 1, route, 0});
}
BENCHMARK(BM_Matmul)->Name("BM_TileThreshold")->Apply(TileThresholdShapes)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Every weight type at the one 0.5B shape whose rows are whole k-quant super-blocks
// (ffn_down, 4864 columns), decode and a prefill block, 2 threads.
void EveryTypeShapes(benchmark::internal::Benchmark* b) {
  for (const WeightTypeTraits& t : weight_types())
    for (int n : {1, 64}) b->Args({static_cast<int>(t.type), 896, 4864, n, 2, 1, 0});
  // q8_0 and q4_0 row-major, as a GGUF's own rows run, with and without VNNI.
  for (int t : {static_cast<int>(WeightType::Q8_0), static_cast<int>(WeightType::Q4_0)})
    for (int n : {1, 64})
      for (int extensions : {1, 0}) b->Args({t, 896, 4864, n, 2, extensions, 1});
  // q4_1, q5_0 and q5_1 without the extensions: row-major on the float kernels (no lanes), the
  // comparison for the lane kernels of the rows above.
  for (WeightType t : {WeightType::Q4_1, WeightType::Q5_0, WeightType::Q5_1})
    for (int n : {1, 64}) b->Args({static_cast<int>(t), 896, 4864, n, 2, 0, 0});
}
BENCHMARK(BM_Matmul)->Name("BM_MatmulEveryType")->Apply(EveryTypeShapes)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The k-quants at Qwen2.5-7B's ffn_down (3584 x 18944: 38 MB of q4_K, past the L3 of the
// machines here), so that decode streams the matrix from memory as a 7B decode step does;
// decode on 1 thread too, which shows the kernel's own rate on a busy machine.
void KQuant7BShapes(benchmark::internal::Benchmark* b) {
  for (WeightType t : {WeightType::Q4_K, WeightType::Q6_K}) {
    for (int n : {1, 64}) b->Args({static_cast<int>(t), 3584, 18944, n, 2, 1, 0});
    b->Args({static_cast<int>(t), 3584, 18944, 1, 1, 1, 0});
  }
}
BENCHMARK(BM_Matmul)->Name("BM_MatmulKQuant7B")->Apply(KQuant7BShapes)->UseRealTime()->Unit(benchmark::kMicrosecond);

// q4_K, q5_K and q6_K rows (in lanes, as the model lays out a GGUF's) through the tiles against the vector kernels
// (the same bits): ffn_down, 2 threads, a prefill block and pp512 with all this CPU has (2)
// and without AMX (1), and the tokens from which the tiles win (3: tiles whatever the tokens).
void KQuantTileShapes(benchmark::internal::Benchmark* b) {
  for (WeightType t : {WeightType::Q4_K, WeightType::Q5_K, WeightType::Q6_K}) {
    for (int n : {64, 512})
      for (int extensions : {2, 1}) b->Args({static_cast<int>(t), 896, 4864, n, 2, extensions, 0});
    for (int n : {4, 8, 12, 16, 32})
      for (int extensions : {3, 1}) b->Args({static_cast<int>(t), 896, 4864, n, 1, extensions, 0});
  }
}
BENCHMARK(BM_Matmul)
    ->Name("BM_MatmulKQuantTiles")
    ->Apply(KQuantTileShapes)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_MatmulReference(benchmark::State& state) {
  ReferenceKernels k;
  Weights m(WeightType::BF16, 896, 896);
  std::vector<float> x(896, 0.5f), y(896);
  for (auto _ : state) {
    k.matmul(m.w, x.data(), 1, nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * 896 * 896);
}
BENCHMARK(BM_MatmulReference)->Unit(benchmark::kMicrosecond);

// args: context length, tokens, threads
void BM_Attention(benchmark::State& state) {
  const int64_t length = state.range(0), n = state.range(1);
  ThreadPool pool(static_cast<int>(state.range(2)));
  CpuKernels k(pool);
  const int64_t heads = 14, kv_heads = 2, hd = 64, bs = 16, kv_dim = kv_heads * hd;
  const int64_t blocks = (length + bs - 1) / bs;
  std::vector<std::byte> arena(static_cast<size_t>(blocks * 2 * bs * kv_dim * 2));
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) table[b] = static_cast<int32_t>(b);
  std::vector<AttentionRow> rows(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) rows[t] = {table.data(), length - n + 1 + t};
  std::vector<float> q(static_cast<size_t>(n * heads * hd), 0.1f), out(q.size());
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.n = n;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.head_dim = hd;
  a.scale = 0.125f;
  a.kv_type = KVType::F16;
  a.k_base = arena.data();
  a.v_base = arena.data() + bs * kv_dim * 2;
  a.block_stride = static_cast<size_t>(2 * bs * kv_dim * 2);
  a.block_size = bs;
  a.rows = rows.data();
  for (auto _ : state) {
    k.attention(a);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Attention)->Args({128, 1, 2})->Args({4096, 1, 2})->Args({512, 512, 2})->Args({4608, 512, 2})->UseRealTime()->Unit(benchmark::kMicrosecond);

// Conversion's quantizers on one thread, 4 Mi values of N(0, 0.02) (a weight matrix's
// spread): args: weight type, 1 for the vectorized quantizer (simd::quantize_blocks), 0 for
// quant's scalar codec (llama.cpp's reference). Items processed are values.
void BM_Quantize(benchmark::State& state) {
  const auto type = static_cast<WeightType>(state.range(0));
  const bool vectorized = state.range(1) != 0;
  const int64_t values = int64_t{1} << 22, blocks = values / traits(type).block_values;
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> x(static_cast<size_t>(values));
  for (auto& v : x) v = d(rng);
  std::vector<std::byte> out(static_cast<size_t>(blocks) * traits(type).block_bytes);
  for (auto _ : state) {
    if (vectorized) {
      if (!simd::quantize_blocks(type, x.data(), out.data(), blocks)) state.SkipWithError("no vectorized quantizer");
    } else {
      traits(type).quantize(x.data(), out.data(), blocks);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * values);
  state.SetLabel(std::string(weight_type_name(type)) + (vectorized ? " vectorized" : " scalar"));
}
void QuantizeTypes(benchmark::internal::Benchmark* b) {
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0, WeightType::Q2_K, WeightType::Q3_K, WeightType::Q4_K,
                       WeightType::Q5_K, WeightType::Q6_K})
    for (int vectorized : {0, 1}) b->Args({static_cast<int64_t>(t), vectorized});
}
BENCHMARK(BM_Quantize)->Apply(QuantizeTypes)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace glass

BENCHMARK_MAIN();
