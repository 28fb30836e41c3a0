// The machine's multiply-add rate for the instruction a matmul path computes with,
// measured: the compute roofline prefill is compared against (as the bandwidth probe gives
// decode's).
#pragma once

#include "kernels/thread_pool.h"

namespace glass {

enum class ComputeInstruction {
  TileBf16,       // AMX tdpbf16ps: 16 x 16 fp32 accumulators, 32 bf16 products each (8192 MACs)
  TileInt8Block,  // AMX tdpbssd on one 32-value block a line, as the q8_0 / q4_0 kernels issue it (8192)
  TileInt8,       // AMX tdpbssd on whole 64-byte lines: the instruction's own peak (16384)
  Vnni512,        // AVX-512 VNNI vpdpbusd on zmm (64 int8 MACs)
  Vnni256,        // AVX-512 VNNI vpdpbusd on ymm (32 int8 MACs), as the interleaved int8 kernels use it
  AvxVnni256,     // AVX-VNNI vpdpbusd on ymm, VEX-encoded (32 int8 MACs): the AVX2 target's int8 kernels
  DpBf16_512,     // AVX512-BF16 vdpbf16ps on zmm (32 bf16 MACs into fp32)
  Fma512,         // AVX-512 vfmadd on zmm (16 fp32 MACs)
  Fma256,         // AVX2 vfmadd on ymm (8 fp32 MACs)
  Int8Avx2,       // AVX2 vpmaddubsw on ymm (32 int8 MACs, into int16 pairs)
  Int16Vnni512,   // AVX-512 VNNI vpdpwssd on zmm (32 int16 MACs), as the q4_K / q6_K prefill uses it
  Int16Madd512,   // AVX-512 vpmaddwd on zmm (32 int16 MACs, into int32 pairs)
  Int16Madd256,   // AVX2 vpmaddwd on ymm (16 int16 MACs, into int32 pairs)
};
const char* compute_instruction_name(ComputeInstruction i);
// AMX instructions (they need the tile permission in every thread that runs them).
bool is_tile(ComputeInstruction i);
// Whether this CPU (and, for tiles, this thread's permission) runs the instruction.
bool can_measure(ComputeInstruction i);

// Runs independent chains of `instruction` on every thread of `pool` for about `seconds`
// a few times and returns the best rate in multiply-adds per second (0 if !can_measure).
// Tile instructions need the tile permission in every thread of the pool (CpuFeatures).
double measure_compute_peak(ThreadPool& pool, ComputeInstruction instruction, double seconds = 0.05,
                            int repetitions = 3);

}  // namespace glass
