#include "kernels/compute_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "kernels/amx_kernels.h"
#include "kernels/bf16_dot_kernels.h"
#include "kernels/simd_kernels.h"

// GCC 12 reports the self-initialised placeholders of its own AVX-512 intrinsics
// (_mm512_undefined_*) as uninitialised.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace glass {

namespace {

using Clock = std::chrono::steady_clock;

// Each loop runs `iterations` steps of independent chains (more chains than the
// instruction's latency times its throughput, so they never wait on each other) and returns
// the multiply-adds done. Results go to `sink` so that nothing is optimised away.

__attribute__((target("avx512f"))) int64_t fma512(int64_t iterations, std::atomic<int>* sink) {
  const __m512 x = _mm512_set1_ps(1.0001f), y = _mm512_set1_ps(0.9999f);
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm512_fmadd_ps(a, x, y);
  }
  __m512 total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm512_add_ps(total, acc[j]);
  sink->fetch_add(_mm512_reduce_add_ps(total) > 0 ? 1 : 0, std::memory_order_relaxed);
  return iterations * 12 * 16;
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) int64_t dpbf16_512(int64_t iterations, std::atomic<int>* sink) {
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3f00);  // 1, 0.5
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm512_dpbf16_ps(a, x, y);
  }
  __m512 total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm512_add_ps(total, acc[j]);
  sink->fetch_add(_mm512_reduce_add_ps(total) > 0 ? 1 : 0, std::memory_order_relaxed);
  return iterations * 12 * 32;
}

// vpdpbusd on ymm, written out in either encoding (no target attribute is needed for it):
// EVEX (AVX512-VNNI with VL) or VEX (AVX-VNNI), as the int8 kernels issue it. A value in and
// out, so that the accumulators below stay in registers (an asm on each array element made
// GCC store all twelve to the stack every iteration: a third of the rate).
template <bool Vex>
__attribute__((target("avx2"), always_inline)) inline __m256i dpbusd256(__m256i acc, __m256i u, __m256i s) {
  if constexpr (Vex) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  else __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  return acc;
}
template <bool Vex>
__attribute__((target("avx2"))) int64_t vnni256(int64_t iterations, std::atomic<int>* sink) {
  const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);
  __m256i acc[12];
  for (auto& a : acc) a = _mm256_setzero_si256();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = dpbusd256<Vex>(a, x, y);
  }
  __m256i total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm256_add_epi32(total, acc[j]);
  sink->fetch_add(_mm256_extract_epi32(total, 0) & 1, std::memory_order_relaxed);
  return iterations * 12 * 32;
}

__attribute__((target("avx2,fma"))) int64_t fma256(int64_t iterations, std::atomic<int>* sink) {
  const __m256 x = _mm256_set1_ps(1.0001f), y = _mm256_set1_ps(0.9999f);
  __m256 acc[12];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm256_fmadd_ps(a, x, y);
  }
  __m256 total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm256_add_ps(total, acc[j]);
  float lanes[8];
  _mm256_storeu_ps(lanes, total);
  sink->fetch_add(lanes[0] > 0 ? 1 : 0, std::memory_order_relaxed);
  return iterations * 12 * 8;
}

__attribute__((target("avx512f,avx512vnni"))) int64_t vnni512(int64_t iterations, std::atomic<int>* sink) {
  const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
  __m512i acc[12];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm512_dpbusd_epi32(a, x, y);
  }
  __m512i total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm512_add_epi32(total, acc[j]);
  sink->fetch_add(_mm512_reduce_add_epi32(total) & 1, std::memory_order_relaxed);
  return iterations * 12 * 64;
}

__attribute__((target("avx2"))) int64_t int8_avx2(int64_t iterations, std::atomic<int>* sink) {
  const __m256i y = _mm256_set1_epi8(-2);
  __m256i acc[12];
  for (auto& a : acc) a = _mm256_set1_epi8(3);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm256_maddubs_epi16(a, y);
  }
  __m256i total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm256_add_epi16(total, acc[j]);
  sink->fetch_add(_mm256_extract_epi16(total, 0) & 1, std::memory_order_relaxed);
  return iterations * 12 * 32;
}

__attribute__((target("avx512f,avx512vnni"))) int64_t int16_vnni512(int64_t iterations, std::atomic<int>* sink) {
  const __m512i x = _mm512_set1_epi16(3), y = _mm512_set1_epi16(-2);
  __m512i acc[12];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm512_dpwssd_epi32(a, x, y);
  }
  __m512i total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm512_add_epi32(total, acc[j]);
  sink->fetch_add(_mm512_reduce_add_epi32(total) & 1, std::memory_order_relaxed);
  return iterations * 12 * 32;
}
// vpmaddwd and the addition that accumulates its pairs, as the kernels without VNNI issue them.
__attribute__((target("avx512f,avx512bw"))) int64_t int16_madd512(int64_t iterations, std::atomic<int>* sink) {
  const __m512i x = _mm512_set1_epi16(3), y = _mm512_set1_epi16(-2);
  __m512i acc[12];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm512_add_epi32(a, _mm512_madd_epi16(x, y));
  }
  __m512i total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm512_add_epi32(total, acc[j]);
  sink->fetch_add(_mm512_reduce_add_epi32(total) & 1, std::memory_order_relaxed);
  return iterations * 12 * 32;
}
__attribute__((target("avx2"))) int64_t int16_madd256(int64_t iterations, std::atomic<int>* sink) {
  const __m256i x = _mm256_set1_epi16(3), y = _mm256_set1_epi16(-2);
  __m256i acc[12];
  for (auto& a : acc) a = _mm256_setzero_si256();
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm256_add_epi32(a, _mm256_madd_epi16(x, y));
  }
  __m256i total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm256_add_epi32(total, acc[j]);
  sink->fetch_add(_mm256_extract_epi32(total, 0) & 1, std::memory_order_relaxed);
  return iterations * 12 * 16;
}
alignas(64) constexpr amx::TileConfig kFullLines = amx::make_config(16, 64, 16);
alignas(64) constexpr amx::TileConfig kBlockLines = amx::make_config(16, 32, 8);

// Four accumulators from two activation and two weight tiles, as the kernels' 32 x 32 steps.
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) int64_t tiles(ComputeInstruction which, int64_t iterations,
                                                                    std::atomic<int>* sink) {
  alignas(64) static constexpr std::byte zeros[1024] = {};
  const bool block = which == ComputeInstruction::TileInt8Block;
  _tile_loadconfig(block ? &kBlockLines : &kFullLines);
  _tile_loadd(4, zeros, 64);
  _tile_loadd(5, zeros, 64);
  _tile_loadd(6, zeros, 64);
  _tile_loadd(7, zeros, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  if (which == ComputeInstruction::TileBf16) {
    for (int64_t i = 0; i < iterations; ++i) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  } else {
    for (int64_t i = 0; i < iterations; ++i) {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  }
  alignas(64) int32_t out[16][16];
  _tile_stored(0, out, 64);
  _tile_release();
  sink->fetch_add(out[0][0] & 1, std::memory_order_relaxed);
  const int64_t k = which == ComputeInstruction::TileBf16 ? 32 : block ? 32 : 64;
  return iterations * 4 * 16 * 16 * k;
}

int64_t run(ComputeInstruction which, int64_t iterations, std::atomic<int>* sink) {
  switch (which) {
    case ComputeInstruction::TileBf16:
    case ComputeInstruction::TileInt8Block:
    case ComputeInstruction::TileInt8: return tiles(which, iterations, sink);
    case ComputeInstruction::Vnni512: return vnni512(iterations, sink);
    case ComputeInstruction::Vnni256: return vnni256<false>(iterations, sink);
    case ComputeInstruction::AvxVnni256: return vnni256<true>(iterations, sink);
    case ComputeInstruction::DpBf16_512: return dpbf16_512(iterations, sink);
    case ComputeInstruction::Fma512: return fma512(iterations, sink);
    case ComputeInstruction::Fma256: return fma256(iterations, sink);
    case ComputeInstruction::Int8Avx2: return int8_avx2(iterations, sink);
    case ComputeInstruction::Int16Vnni512: return int16_vnni512(iterations, sink);
    case ComputeInstruction::Int16Madd512: return int16_madd512(iterations, sink);
    case ComputeInstruction::Int16Madd256: return int16_madd256(iterations, sink);
  }
  return 0;
}

}  // namespace

bool is_tile(ComputeInstruction i) {
  return i == ComputeInstruction::TileBf16 || i == ComputeInstruction::TileInt8Block ||
         i == ComputeInstruction::TileInt8;
}

const char* compute_instruction_name(ComputeInstruction i) {
  switch (i) {
    case ComputeInstruction::TileBf16: return "AMX tdpbf16ps";
    case ComputeInstruction::TileInt8Block: return "AMX tdpbssd, 32-value blocks";
    case ComputeInstruction::TileInt8: return "AMX tdpbssd";
    case ComputeInstruction::Vnni512: return "AVX-512 vpdpbusd zmm";
    case ComputeInstruction::Vnni256: return "AVX-512 vpdpbusd ymm";
    case ComputeInstruction::AvxVnni256: return "AVX-VNNI vpdpbusd ymm";
    case ComputeInstruction::DpBf16_512: return "AVX512-BF16 vdpbf16ps zmm";
    case ComputeInstruction::Fma512: return "AVX-512 fp32 FMA zmm";
    case ComputeInstruction::Fma256: return "AVX2 fp32 FMA ymm";
    case ComputeInstruction::Int8Avx2: return "AVX2 vpmaddubsw ymm";
    case ComputeInstruction::Int16Vnni512: return "AVX-512 vpdpwssd zmm";
    case ComputeInstruction::Int16Madd512: return "AVX-512 vpmaddwd zmm";
    case ComputeInstruction::Int16Madd256: return "AVX2 vpmaddwd ymm";
  }
  return "?";
}

bool can_measure(ComputeInstruction i) {
#if defined(__x86_64__)
  if (is_tile(i)) return amx::cpu_has_amx() && amx::tile_permission_granted();
  if (i == ComputeInstruction::Vnni512 || i == ComputeInstruction::Vnni256 || i == ComputeInstruction::Int16Vnni512)
    return amx::cpu_has_vnni512();
  if (i == ComputeInstruction::AvxVnni256) return simd::cpu_has_avx_vnni();
  if (i == ComputeInstruction::DpBf16_512) return bf16dot::cpu_has_avx512_bf16();
  if (i == ComputeInstruction::Fma512) return __builtin_cpu_supports("avx512f");
  if (i == ComputeInstruction::Int16Madd512) return __builtin_cpu_supports("avx512bw");
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  (void)i;
  return false;
#endif
}

double measure_compute_peak(ThreadPool& pool, ComputeInstruction instruction, double seconds, int repetitions) {
  if (!can_measure(instruction)) return 0;
  std::atomic<int> sink{0};
  // Steps per timing check: about a millisecond of work on any of these instructions.
  const int64_t step = is_tile(instruction) ? 20000 : 200000;
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    std::vector<int64_t> done(static_cast<size_t>(pool.size()), 0);
    std::atomic<int> refused{0};
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(seconds);
    pool.run([&](int thread) {
      if (is_tile(instruction) && !amx::tile_permission_granted()) {
        refused.fetch_add(1);
        return;
      }
      int64_t macs = 0;
      do macs += run(instruction, step, &sink);
      while (Clock::now() < deadline);
      done[static_cast<size_t>(thread)] = macs;
    });
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (refused.load() > 0) return 0;
    int64_t total = 0;
    for (int64_t d : done) total += d;
    best = std::max(best, static_cast<double>(total) / elapsed);
  }
  return best;
}

}  // namespace glass
