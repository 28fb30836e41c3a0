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

void dequantize_row(const WeightMatrix& w, int64_t r, float* out) {
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
        for (int j = 0; j < 32; ++j) blocks[b].q[j] = static_cast<int8_t>(std::roundf(x[j] * id));
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
