// The fast CPU path: SIMD kernels (simd_kernels.h) split across a thread pool.
// Work is split by output rows (matmul) or by (token, head) pairs (attention), never
// by the reduction dimension, so the split does not change any result.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/amx_kernels.h"
#include "kernels/compute_peak.h"
#include "kernels/kernels.h"
#include "kernels/simd_kernels.h"
#include "kernels/thread_pool.h"

namespace glass {

// Which instruction-set extensions beyond the dispatched SIMD target the kernels use;
// tests turn them off to check each path against the others.
struct CpuFeatures {
  bool avx512_vnni = false;  // int8 dot products in one instruction (interleaved / tiled q8_0, q4_0)
  // The AVX2 target's int8 kernels (q8_0, q4_0) multiply with vpdpbusd on ymm: AVX-VNNI's VEX
  // encoding (Intel's client cores, which lack AVX-512), or AVX512-VNNI's EVEX encoding where
  // the CPU has that instead (GLASS_CPU=avx2 on an AVX-512 machine). The same bits either way.
  bool avx2_vnni = false;
  // vdpbf16ps for bf16 weights when the kernels round activations to bf16 (MatmulPrecision::Bf16,
  // bf16_dot_kernels.h); without it they multiply the rounded activations as floats.
  bool avx512_bf16 = false;
  // q4_1, q5_0, q5_1, q4_K, q5_K and q6_K matrices laid out in lanes for their integer kernels
  // (weight_matrix.h), on the AVX-512 paths. The AVX2 paths keep them row-major: q4_1 / q5_0 /
  // q5_1 decoded to floats (there the lane kernels measured slower in prefill), the k-quants on
  // their kernels for 256-bit vectors (docs/performance.md).
  bool lanes = false;
  bool amx = false;          // the tile kernels (amx_kernels.h) run: the CPU has AMX and Linux granted it
  // With `amx`: the tile kernels run on the emulated tile unit (amx_tile_emulation.h), which
  // needs no AMX (amx::cpu_can_emulate_tiles) and is slow: for tests, and GLASS_CPU=amx-emulated.
  bool amx_emulated = false;
  // Tokens from which tiled q8_0 / q4_0 matrices run through the tiles rather than the
  // AVX-512 VNNI kernel on the same layout, and q4_K / q5_K / q6_K rows rather than their
  // vector kernels. Both give the same bits, so this is only a speed choice (made for q8_0 /
  // q4_0 on the Intel machine with glass_kernel_bench's BM_Matmul variants 3 and 4, tiles
  // always and never; BM_MatmulKQuantTiles has the k-quants' variants, not yet measured on
  // AMX); tests and benchmarks move it.
  int64_t int8_tile_min_tokens = 12;
  // Whether q8_0 / q4_0 matrices are laid out for the tile kernels (bf16 always is with AMX).
  // The int8 tile and VNNI-on-tiles kernels give the bits of the vector kernels on the 8-row
  // interleaved layout (tested), so matrices converted at load, which would be interleaved,
  // are tiled. A file's own q8_0 / q4_0 rows (a GGUF's) are not: the model uses them in
  // place, row-major, whose kernels add the blocks up in llama.cpp's order, and tiled they
  // flipped one more near-tie argmax of the GGUF fixture's Q4_0 file than llama.cpp does (132
  // of 136 against 133). Benchmarks turn it off to compare.
  bool amx_int8 = true;
  // Why a path this CPU has is not used (a refused AMX permission), for a message; empty if none.
  std::string note;

  // What this process uses: everything the CPU has, less what the environment variable
  // GLASS_CPU=amx|avx512|avx2|scalar turns off (or amx-emulated: the AMX path on the emulated
  // tile unit, to test it on CPUs without AMX). Decided once per process, by the first call,
  // which also requests the AMX permission (so call it before starting threads that will run
  // tiles: Backend does), restricts Highway's targets to the chosen path and prints the note,
  // if any, once to stderr. Throws naming GLASS_CPU for a value that is not a path, or a path
  // this CPU lacks.
  static CpuFeatures detect();

  // What detect() decides for a GLASS_CPU value (null or empty: unset) with `request_permission`
  // standing for the Linux permission request: the test hook for a refused request. Has no
  // effect on the process beyond calling request_permission (only when the CPU has AMX and
  // the path allows it). `disabled_targets` gets the Highway targets the path leaves out.
  using PermissionRequest = bool (*)(std::string* reason);
  static CpuFeatures decide(const char* glass_cpu, PermissionRequest request_permission, int64_t* disabled_targets);
};

// The layout CpuKernels with `features` reads a matrix of this type fastest in: q8_0 / q4_0
// interleaved in groups of 8 rows (weight_matrix.h), or with AMX bf16, q8_0 and q4_0 tiled
// in groups of 16 (matrices of whole tiles: rows a multiple of 16, columns of 32); q4_1, q5_0
// and q5_1 in lanes with CpuFeatures::lanes. cpu_layout_differs says whether `w` is not in it yet;
// cpu_layout returns
// `w` in it, in a new buffer that replaces `storage` when it had to move (storage holds w's
// bytes or is null when they belong to someone else, e.g. a memory map).
bool cpu_layout_differs(const WeightMatrix& w, const CpuFeatures& features = CpuFeatures::detect());
// Whether that layout is AMX tiles (and `w` is not tiled yet).
bool cpu_layout_tiles(const WeightMatrix& w, const CpuFeatures& features = CpuFeatures::detect());
WeightMatrix cpu_layout(const WeightMatrix& w, std::unique_ptr<std::byte[]>& storage,
                        const CpuFeatures& features = CpuFeatures::detect());

class CpuKernels final : public Kernels {
 public:
  // With features.amx (on the CPU's tiles), checks that every thread of `pool` may run tile
  // instructions; if one may not, the tile kernels stay off (features().note says why).
  explicit CpuKernels(ThreadPool& pool, CpuFeatures features = CpuFeatures::detect(),
                      MatmulPrecision precision = MatmulPrecision::Float);
  const char* name() const override { return "cpu"; }
  const CpuFeatures& features() const { return features_; }
  // The SIMD target chosen for this CPU, e.g. "AVX2", and the extensions used beside it
  // ("AVX3 + VNNI + AMX").
  static const char* simd_target();
  std::string simd_path() const;
  // The kernel a matmul of this matrix over n tokens runs: "AMX-BF16", "AMX-INT8",
  // "AVX3 + VNNI", "AVX2", ... (for reports).
  std::string matmul_path(const WeightMatrix& w, int64_t n) const;
  // What a matmul over n tokens computes with, for a matrix of this type laid out by
  // cpu_layout for these kernels (of whole tiles, as every Qwen matrix): the path's name, its
  // instruction, how many of the instruction's multiply-adds make one of the matmul's (3 for
  // bf16 tiles: three parts per activation; 1 in the bf16 matmul precision) and how they are
  // done. valid is false where there is no vector instruction to measure (the portable target).
  struct ComputePath {
    std::string name;
    ComputeInstruction instruction = ComputeInstruction::Fma256;
    int passes = 1;
    std::string how;
    bool valid = false;
  };
  // For a matrix as the model holds it (its type and layout).
  ComputePath compute_path(const WeightMatrix& w, int64_t n) const;

  void matmul(const WeightMatrix& w, const float* x, int64_t n, const float* bias, float* y) override;
  void matmul_multi(const MatmulOutput* outputs, size_t count, const float* x, int64_t n) override;
  void mlp_gate_up(const WeightMatrix& gate, const WeightMatrix& up, const float* x, int64_t n, float* out) override;
  void rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) override;
  void rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) override;
  void silu_mul(const float* gate, const float* up, int64_t count, float* out) override;
  void add(float* x, const float* y, int64_t count) override;
  void attention(const AttentionArgs& args) override;

 private:
  // Which kernel runs a matmul, and so which activations it reads.
  enum class Route {
    Vector,   // simd::matmul_rows (its own rows decoded to f32 first for a type without a kernel)
    Tiles,    // amx::matmul_tiles
    Vnni,     // amx::matmul_vnni: tiled q8_0 / q4_0, few tokens
    Decoded,  // a tiled matrix without its kernels here: rows decoded to f32, the f32 kernel
    Bf16Dot,  // bf16dot::matmul_rows: row-major bf16, activations rounded to bf16, AVX512-BF16
  };
  Route route(const WeightMatrix& w, int64_t n) const;
  const std::byte* prepare(Route route, const WeightMatrix& w, const float* x, int64_t n, std::vector<std::byte>& buffer);
  void matmul_rows(Route route, const WeightMatrix& w, const std::byte* xp, int64_t n, int64_t row_begin,
                   int64_t row_end, const float* bias, float* y) const;
  // Rows decoded kRowGrain at a time to f32 and run through the f32 kernel.
  void decoded_rows(const WeightMatrix& w, const float* x, int64_t n, int64_t row_begin, int64_t row_end,
                    const float* bias, float* y) const;

  // Attention with tiles (features_.amx, KV blocks of 16).
  void attention_tiles(const AttentionArgs& args);
  amx::TileUnit tile_unit() const { return features_.amx_emulated ? amx::TileUnit::Emulated : amx::TileUnit::Hardware; }
  // Whether the dispatched SIMD target's kernels use VNNI (simd::matmul_rows's `vnni`).
  bool target_vnni() const;

  ThreadPool& pool_;
  CpuFeatures features_;
  std::vector<std::byte> prepared_;
  std::vector<std::byte> prepared_up_;  // when gate and up differ in type
  std::vector<float> rounded_;          // activations rounded to bf16 for the kernels that multiply floats
  std::vector<float> gate_scratch_, up_scratch_, attention_scratch_;
  std::vector<simd::AttentionTile> attention_row_tiles_;  // the batch's rows, grouped by sequence
  std::vector<std::byte> attention_tiles_;  // the tiled attention's KV tiles and per-thread scratch
};

}  // namespace glass
