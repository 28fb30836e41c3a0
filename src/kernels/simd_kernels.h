// Single-threaded SIMD building blocks, compiled for several CPU targets with Highway
// and dispatched at run time to the best one this CPU supports. CpuKernels splits the
// work across threads and calls these on ranges.
//
// Every output element is computed by the same sequence of operations whatever the
// batch size or tile shape, so a sequence's results never depend on what else is in
// its batch (batch invariance).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/weight_matrix.h"

namespace glass::simd {

// Name of the target the dispatcher picks on this CPU ("AVX2", "AVX3", "EMU128", ...).
const char* target_name();

// For tests: the targets compiled in that this CPU runs, and a way to force one
// (0 restores the automatic choice). Process-wide; tests only.
std::vector<int64_t> available_targets();
void force_target(int64_t target);
const char* name_of_target(int64_t target);

// q8_0 / q4_0 blocks (32 values) or q2_K / q4_K / q5_K / q6_K super-blocks (256) from
// floats, bit for bit what quant's codecs (llama.cpp's reference quantizers) write,
// vectorized; false (and nothing written) for other types.
bool quantize_blocks(WeightType type, const float* in, std::byte* out, int64_t blocks);
// bf16 / f16 values widened to floats, vectorized; false (and nothing written) for other types.
bool widen_to_float(WeightType type, const std::byte* src, float* out, int64_t count);
// Floats rounded to bf16 and back (f32_to_bf16_flushed), vectorized: MatmulPrecision::Bf16's
// activations for the kernels that multiply floats. `out` may be `in`.
void round_to_bf16(const float* in, float* out, int64_t count);

// Activations for the q4_K / q5_K / q6_K integer kernels (simd_kquant_dot.inc, and the tile
// kernel of amx_kernels.cpp): one block per 256 values x, X = round(x / d) with d = amax / 2047. |X| <= 2047 bounds every sum the kernels
// form: a q4_K super-block's dot is at most 8 * 63 * 32 * 15 * 2047 < 2^29, a q5_K one's
// 8 * 63 * 32 * 31 * 2047 < 2^30, a q6_K one's 16 * 128 * 16 * 32 * 2047 < 2^31, and the sums
// of 16 values fit int16.
// X is kept twice: as int16 words, which prefill multiplies with weights unpacked to words,
// and as two byte planes X = 16 hi + lo, which decode multiplies with the packed codes as they
// are without unpacking a row it reads once. Both are in value order, but on AVX-512 in the
// lane order of the weights there (weight_matrix.h: position 64k + 4j + b holds value
// 16j + 4k + b); sums[j] is of values 16j .. 16j + 15 either way.
struct KActBlock {
  int16_t x[256];
  int8_t hi[256];    // X >> 4, in [-128, 127]
  int8_t lo[256];    // X & 15
  int16_t sums[16];  // of x over values 16j..16j+15
  float d;
  int32_t padding[7];  // a whole number of cache lines
};
static_assert(sizeof(KActBlock) == 1088);
// A KActBlock's x, hi and lo from value order into lane order; whether prepare_rows writes
// them in lane order (the AVX-512 target) or in value order (the others).
void kquant_act_to_lane_order(KActBlock& a);
bool kquant_activations_in_lanes();

// Activations for the q4_1 / q5_0 / q5_1 kernels (simd_lane_dot.inc): per 32-value block
// X = round(x / d), d = amax / 2047, |X| <= 2047, as two byte planes X = 16 hi + lo; the
// blocks in groups of kLaneBlocks across lanes as the lane layout has them
// (weight_matrix.h), a group padded with zero blocks to 16. Plane k's bytes 4i .. 4i + 3
// are block i's values 4k .. 4k + 3. A block's dot is at most 32 * 31 * 2047 < 2^21, exact
// in float32.
struct LaneActGroup {
  float d[16];
  int32_t sums[16];  // of X per block
  int8_t hi[8][64];  // X >> 4, in [-128, 127]
  int8_t lo[8][64];  // X & 15
};
static_assert(sizeof(LaneActGroup) == 1152);

// Activations are prepared once per matmul in the layout the weight type's kernel
// reads (its ActivationFormat; activation_format(w) for a matrix): f32 (F32, F16 and the
// block types decoded to float), f32 reordered within each vector-pair of values (BF16),
// blocks of 32 int8 values with a float scale (Q8_0, Q4_0), a LaneActGroup per 512 values
// (Q4_1, Q5_0, Q5_1 in lanes), or a KActBlock per 256 values (Q4_K, Q5_K, Q6_K).
size_t prepared_row_bytes(ActivationFormat format, int64_t cols);
void prepare_rows(WeightType type, const float* x, int64_t n, int64_t cols, std::byte* out);

// y[t, r] = dot(w row r, x row t) (+ bias[r]) for rows [row_begin, row_end) and all n
// tokens; y has w.rows columns. `prepared` comes from prepare_rows. `vnni`: the kernels may
// use VNNI dot products, only where the CPU has them: on the AVX-512 target AVX512-VNNI
// (cpu_has_avx512_vnni: the int8 and k-quant kernels), on the AVX2 target vpdpbusd on ymm in
// AVX-VNNI's or AVX512-VNNI's encoding (cpu_has_avx_vnni, else cpu_has_avx512_vnni: the int8
// kernels); their results are bit-identical to the kernels without.
void matmul_rows(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y, bool vnni);

// Whether this CPU has AVX512-VNNI with AVX512-VL.
bool cpu_has_avx512_vnni();
// Whether this CPU has AVX-VNNI (the VEX-encoded vpdpbusd / vpdpwssd on ymm, without AVX-512).
bool cpu_has_avx_vnni();

void rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y);
void silu_mul(const float* gate, const float* up, int64_t count, float* out);
void add(float* x, const float* y, int64_t count);
void rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin);

// Reads `count` floats and returns their sum: the memory-bandwidth probe's kernel.
float sum_floats(const float* p, int64_t count);

// Consecutive rows of the batch that belong to one sequence (the same block table), at
// most kMaxAttentionTileRows: an attention task converts each cached K/V block once for
// all of them.
struct AttentionTile {
  int64_t first_row = 0;
  int64_t rows = 1;
};
inline constexpr int64_t kMaxAttentionTileRows = 4;

// Attention for tasks [task_begin, task_end): a task is a tile of rows, a KV head and a
// chunk of up to heads_per_task of the query heads that read it, task = (tile * kv_heads +
// kvh) * chunks + chunk with chunks = ceil(group / heads_per_task). Blockwise online
// softmax over the cached positions; each row's and head's result is the same however the
// rows are tiled and the heads chunked. `scratch` holds at least
// attention_scratch_floats(args, heads_per_task) floats.
int64_t attention_scratch_floats(const AttentionArgs& args, int64_t heads_per_task);
void attention_tasks(const AttentionArgs& args, const AttentionTile* tiles, int64_t heads_per_task, int64_t task_begin,
                     int64_t task_end, float* scratch);

}  // namespace glass::simd
