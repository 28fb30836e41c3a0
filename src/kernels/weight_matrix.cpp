#include "kernels/weight_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/half.h"

namespace glass {

namespace {

// Row r (r < w.interleaved_rows()) of an interleaved matrix, block by block.
void dequantize_interleaved_row(const WeightMatrix& w, int64_t r, float* out) {
  const int64_t g = r / kInterleaveRows, i = r % kInterleaveRows;
  for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
    const std::byte* block = w.group_block(g, b);
    const float d = f16_to_f32(interleaved_scale(block, i));
    const uint8_t* q = interleaved_quants(block);
    for (int k = 0; k < 32; ++k) out[b * kQuantBlock + k] = static_cast<float>(interleaved_value(w.type, q, i, k)) * d;
  }
}

}  // namespace

WeightMatrix interleave_rows(const WeightMatrix& w, std::byte* out) {
  if (!interleavable(w.type) || w.interleaved) fail("interleave_rows needs a row-major q8_0 or q4_0 matrix");
  WeightMatrix iw = w;
  iw.data = out;
  iw.interleaved = true;
  const int64_t blocks = w.cols / kQuantBlock;
  const int64_t grouped = iw.interleaved_rows();
  for (int64_t g = 0; g < grouped / kInterleaveRows; ++g) {
    for (int64_t b = 0; b < blocks; ++b) {
      auto* dst = const_cast<std::byte*>(iw.group_block(g, b));
      auto* q = const_cast<uint8_t*>(interleaved_quants(dst));
      std::memset(q, 0, static_cast<size_t>(kInterleaveRows) * (w.type == WeightType::Q8_0 ? 32 : 16));
      for (int64_t i = 0; i < kInterleaveRows; ++i) {
        const std::byte* row = w.row(g * kInterleaveRows + i);
        if (w.type == WeightType::Q8_0) {
          const auto& src = reinterpret_cast<const BlockQ8_0*>(row)[b];
          std::memcpy(dst + 2 * i, &src.scale, 2);
          for (int k = 0; k < 32; ++k) q[interleaved_byte(w.type, i, k)] = static_cast<uint8_t>(src.q[k]);
        } else {
          const auto& src = reinterpret_cast<const BlockQ4_0*>(row)[b];
          std::memcpy(dst + 2 * i, &src.scale, 2);
          for (int k = 0; k < 32; ++k) {
            const int nibble = k < 16 ? (src.q[k] & 0x0f) : (src.q[k - 16] >> 4);
            q[interleaved_byte(w.type, i, k)] |= static_cast<uint8_t>(interleaved_high_nibble(k) ? nibble << 4 : nibble);
          }
        }
      }
    }
  }
  std::memcpy(out + static_cast<size_t>(grouped) * w.row_bytes, w.row(grouped),
              static_cast<size_t>(w.rows - grouped) * w.row_bytes);
  return iw;
}

void dequantize_row(const WeightMatrix& w, int64_t r, float* out) {
  if (r < w.interleaved_rows()) {
    dequantize_interleaved_row(w, r, out);
    return;
  }
  dequantize_values(w.type, w.row(r), out, w.cols);
}

void quantize_row(WeightType t, const float* in, int64_t cols, std::byte* out) { quantize_values(t, in, out, cols); }

}  // namespace glass
