#include "kernels/weight_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/half.h"

namespace glass {

const char* weight_type_name(WeightType t) {
  switch (t) {
    case WeightType::F32: return "f32";
    case WeightType::F16: return "f16";
    case WeightType::BF16: return "bf16";
    case WeightType::Q8_0: return "q8_0";
    case WeightType::Q4_0: return "q4_0";
  }
  return "?";
}

bool parse_weight_type(const std::string& s, WeightType* out) {
  for (WeightType t : {WeightType::F32, WeightType::F16, WeightType::BF16, WeightType::Q8_0, WeightType::Q4_0}) {
    if (s == weight_type_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool is_block_quantized(WeightType t) { return t == WeightType::Q8_0 || t == WeightType::Q4_0; }

size_t weight_row_bytes(WeightType t, int64_t cols) {
  const auto n = static_cast<size_t>(cols);
  switch (t) {
    case WeightType::F32: return 4 * n;
    case WeightType::F16:
    case WeightType::BF16: return 2 * n;
    case WeightType::Q8_0: return n / kQuantBlock * sizeof(BlockQ8_0);
    case WeightType::Q4_0: return n / kQuantBlock * sizeof(BlockQ4_0);
  }
  return 0;
}

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
  if (!is_block_quantized(w.type) || w.interleaved) fail("interleave_rows needs a row-major q8_0 or q4_0 matrix");
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
  const std::byte* src = w.row(r);
  const int64_t n = w.cols;
  switch (w.type) {
    case WeightType::F32:
      std::memcpy(out, src, 4 * static_cast<size_t>(n));
      return;
    case WeightType::BF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return;
    }
    case WeightType::F16: {
      const auto* p = reinterpret_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      return;
    }
    case WeightType::Q8_0: {
      const auto* blocks = reinterpret_cast<const BlockQ8_0*>(src);
      for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float d = f16_to_f32(blocks[b].scale);
        for (int j = 0; j < 32; ++j) out[b * 32 + j] = static_cast<float>(blocks[b].q[j]) * d;
      }
      return;
    }
    case WeightType::Q4_0: {
      const auto* blocks = reinterpret_cast<const BlockQ4_0*>(src);
      for (int64_t b = 0; b < n / kQuantBlock; ++b) {
        const float d = f16_to_f32(blocks[b].scale);
        for (int j = 0; j < 16; ++j) {
          out[b * 32 + j] = static_cast<float>((blocks[b].q[j] & 0x0f) - 8) * d;
          out[b * 32 + j + 16] = static_cast<float>((blocks[b].q[j] >> 4) - 8) * d;
        }
      }
      return;
    }
  }
}

void quantize_row(WeightType t, const float* in, int64_t cols, std::byte* out) {
  const auto n = static_cast<size_t>(cols);
  switch (t) {
    case WeightType::F32:
      std::memcpy(out, in, 4 * n);
      return;
    case WeightType::BF16: {
      auto* p = reinterpret_cast<uint16_t*>(out);
      for (size_t i = 0; i < n; ++i) p[i] = f32_to_bf16(in[i]);
      return;
    }
    case WeightType::F16: {
      auto* p = reinterpret_cast<uint16_t*>(out);
      for (size_t i = 0; i < n; ++i) p[i] = f32_to_f16(in[i]);
      return;
    }
    case WeightType::Q8_0: {
      if (cols % kQuantBlock != 0) fail("q8_0 needs rows whose length is a multiple of 32, got ", cols);
      auto* blocks = reinterpret_cast<BlockQ8_0*>(out);
      for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
        const float* x = in + b * 32;
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        blocks[b].scale = f32_to_f16(d);
        for (int j = 0; j < 32; ++j) blocks[b].q[j] = static_cast<int8_t>(round_half_away(x[j] * id));
      }
      return;
    }
    case WeightType::Q4_0: {
      if (cols % kQuantBlock != 0) fail("q4_0 needs rows whose length is a multiple of 32, got ", cols);
      auto* blocks = reinterpret_cast<BlockQ4_0*>(out);
      for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
        const float* x = in + b * 32;
        float amax = 0, max = 0;  // the value of largest magnitude, with its sign
        for (int j = 0; j < 32; ++j) {
          if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
          }
        }
        const float d = max / -8.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        blocks[b].scale = f32_to_f16(d);
        for (int j = 0; j < 16; ++j) {
          const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
          const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
          blocks[b].q[j] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
      return;
    }
  }
}

}  // namespace glass
