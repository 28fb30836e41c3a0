// Intel AMX (Advanced Matrix Extensions) kernels: the tile unit multiplies a 16-row tile of
// activations by a tile of weights (tdpbf16ps for bf16, tdpbssd for int8) in one
// instruction. The code here is compiled for AMX and AVX-512 function by function and is
// only called after the CPU check (cpu_has_amx) and the Linux permission request
// (request_tile_permission), so the binary still runs on CPUs without them.
//
// The tiled layout the kernels read is described in weight_matrix.h (WeightMatrix::tiled).
//
// Results. int8 types: every block's int32 dot is exact and the float steps after it are the
// ones of the vector kernels (acc = fma(float(dot), d_w * d_x, acc) block by block, then
// + bias), so the tile kernels, the AVX-512 VNNI kernel on the same layout (matmul_vnni, for
// few tokens) and the vector kernels on the 8-row interleaved layout give bit-identical
// results. q4_K, q5_K and q6_K (a GGUF's row-major blocks, unpacked per matmul into tiles):
// weights times sub-block scales and the vector kernels' 12-bit activations, each as two signed
// 6-bit parts, make four tdpbssd products whose exact int32 sums combine into the super-block's
// dot; the float steps after it are the vector kernels' (simd_kquant_dot.inc), so the outputs
// are theirs bit for bit. bf16: the activations are split into kBf16Parts bf16 parts (x = hi + mid + lo,
// each rounded to nearest even from what the parts before it leave: with three parts every
// float whose exponent allows is represented exactly, two hold only 16 significant bits,
// which missed the fixtures' 1e-4 logit bounds), each multiplied by the tile, products exact
// in fp32 and summed
// by the tile unit in its own order; results differ from the vector kernels in the last
// bits, so bf16 tiled matrices run through the tiles for every token count (batch
// invariance: a row's result never depends on the others). Activations already rounded to
// bf16 (MatmulPrecision::Bf16) are their own single part: one tdpbf16ps per tile product
// instead of three.
//
// Every kernel that uses tiles runs on a TileUnit: the CPU's, or EmulatedTiles
// (amx_tile_emulation.h), a plain C++ model of the instructions that tests use on CPUs without
// AMX (it needs only the AVX-512 subsets the code around the tiles uses: cpu_can_emulate_tiles).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/kernels.h"
#include "kernels/weight_matrix.h"

namespace glass::amx {

inline constexpr int kBf16Parts = 3;  // bf16 parts per activation (hi, mid, lo)
// Parts per activation for a matmul precision: 1 when the activations are rounded to bf16.
inline int bf16_parts(MatmulPrecision p) { return p == MatmulPrecision::Bf16 ? 1 : kBf16Parts; }

enum class TileUnit { Hardware, Emulated };

// The palette-1 tile configuration ldtilecfg reads: 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tile registers: 0-3 accumulators (`tokens` tokens x 16 weight rows of fp32 or int32), 4-6
// activations (`tokens` tokens each), 6-7 weights (16 rows each; tile 6 holds activations
// only in the bf16 kernel for 16 tokens or fewer, which has no second weight tile).
inline constexpr TileConfig make_config(uint8_t tokens, uint16_t activation_bytes, uint8_t weight_lines) {
  TileConfig c;
  for (int i = 0; i < 4; ++i) c.rows[i] = tokens, c.colsb[i] = 64;
  for (int i = 4; i < 6; ++i) c.rows[i] = tokens, c.colsb[i] = activation_bytes;
  c.rows[6] = weight_lines, c.colsb[6] = 64;
  c.rows[7] = weight_lines, c.colsb[7] = 64;
  return c;
}

// CPUID: AMX-TILE, AMX-INT8 and AMX-BF16, the OS's tile state, and the AVX-512 subsets the
// kernels use around the tiles (cpu_can_emulate_tiles).
bool cpu_has_amx();
// Linux: asks the kernel to enable the tile-data state for this process (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). Returns false, with `reason` set, when refused.
bool request_tile_permission(std::string* reason);
// Whether the calling thread may execute tile instructions (ARCH_GET_XCOMP_PERM).
bool tile_permission_granted();

// Whether this CPU has the AVX-512 subsets matmul_vnni uses (F, BW, VL, VNNI) with F16C.
bool cpu_has_vnni512();
// Whether the tile kernels can run on EmulatedTiles here: cpu_has_amx() less the tiles (the
// AVX-512 F, BW, VL, DQ, VNNI and BF16 subsets, F16C and FMA).
bool cpu_can_emulate_tiles();

// ---------------------------------------------------------------- kernels (tile permission required)

// Prepared activations of the tile and VNNI kernels, room for padded_tokens(n) tokens: with
// 16 or more tokens the tiles read 16 lines at a time, and the lines past the last token
// hold whatever the buffer held (their products are computed and never stored; with fewer
// than 16 tokens the tiles hold only the tokens' lines). bf16: tile-major, for each 16
// tokens, chunk of 32 columns and part (bf16_parts of them: 1 or kBf16Parts), one 1 KiB tile
// of 16 lines; q8_0 / q4_0 (bf16_parts ignored): the blocks the vector kernels quantize the
// activations into (simd::prepare_rows: scale amax / 127, values rounded to
// nearest even), bit for bit, their int8 values tile-major (per 16 tokens and block, a
// 512-byte tile), their scales and sums of values in [block][token] tables; q4_K / q5_K / q6_K:
// simd::prepare_rows's KActBlocks, their values in two parts tile-major (per 16 tokens,
// super-block, 64 values and part, a 1 KiB tile), d_x and the sums of 16 values in
// [super-block][token] tables. prepare_rows
// writes tokens [begin, end) of [0, n): disjoint ranges may run in parallel.
int64_t padded_tokens(int64_t n);
size_t prepared_bytes(WeightType t, int bf16_parts, int64_t n, int64_t cols);
void prepare_rows(WeightType t, int bf16_parts, const float* x, int64_t n, int64_t begin, int64_t end, int64_t cols,
                  std::byte* out);

// y[t, r] = dot(w row r, x row t) (+ bias[r]) for rows [row_begin, row_end) of a tiled
// matrix, or of a row-major q4_K / q5_K / q6_K one, and all n tokens, with tiles (`prepared`
// by prepare_rows with the same bf16_parts).
// Loads its tile configuration and releases the tiles on return; on the hardware unit the
// calling thread must hold the tile permission.
void matmul_tiles(TileUnit unit, const WeightMatrix& w, const std::byte* prepared, int bf16_parts, int64_t n,
                  int64_t row_begin, int64_t row_end, const float* bias, float* y);
// The same for a tiled q8_0 / q4_0 matrix with AVX-512 VNNI vector instructions (no tiles:
// faster for a few tokens), bit-identical to matmul_tiles. Needs cpu_has_vnni512().
void matmul_vnni(const WeightMatrix& w, const std::byte* prepared, int64_t n, int64_t row_begin, int64_t row_end,
                 const float* bias, float* y);

// ---------------------------------------------------------------- attention with tiles

// Causal attention over the paged KV cache with tiles, for KV blocks of 16 positions
// (attention_supported). A KV block is first converted, for all KV heads, into tiles: K
// transposed into the dimension pairs tdpbf16ps multiplies and V into position pairs, each
// split into exact bf16 parts (f32: 3, f16: 2, bf16: 1; positions past the block's written
// ones zero). Then up to 16 query rows (token, head) of one KV head and one sequence go
// through their context block by block: scores S = Q K^T with the tiles (queries in 3 bf16
// parts; the part products below 2^-24 relative left out), scaled, masked to each row's own
// length, an online softmax per row with AVX-512, P (3 parts) times V with the tiles, and
// O = O * correction + PV per row. Each row's operations depend only on that row and its own
// context (blocks past its length change nothing), so a row's result is the same whatever
// rows share its tile, whatever the batch and however many threads: decode and prefill use
// the same path.
bool attention_supported(const AttentionArgs& a);
// Bytes of one KV block's tiles (all KV heads), a multiple of 64.
size_t attention_block_bytes(const AttentionArgs& a);
// KV block `block_id`, its first `valid` positions (1..16), into tiles at `out`
// (attention_block_bytes, 64-byte aligned).
void attention_prepare_block(const AttentionArgs& a, int32_t block_id, int64_t valid, std::byte* out);
// Bytes of scratch attention_rows needs (64-byte aligned).
size_t attention_rows_scratch_bytes(const AttentionArgs& a);
// Query rows rows[0..count) (each t * heads + h, count 1..16), all reading KV head
// `kv_head` and the block table of one sequence, whose block b's tiles are at
// block_tiles[b]: writes their outputs. On the hardware unit the calling thread must hold the
// tile permission.
void attention_rows(TileUnit unit, const AttentionArgs& a, int64_t kv_head, const int64_t* rows, int count,
                    const std::byte* const* block_tiles, std::byte* scratch);

}  // namespace glass::amx
