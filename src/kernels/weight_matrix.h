// A weight matrix as the kernels see it: rows of `cols` values in one of the
// supported encodings. Row r starts at data + r * row_bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace glass {

enum class WeightType { F32, F16, BF16, Q8_0, Q4_0 };

const char* weight_type_name(WeightType t);             // "f32", "bf16", "q8_0", ...
bool parse_weight_type(const std::string& s, WeightType* out);

// llama.cpp-compatible blocks of 32 values with an fp16 scale.
inline constexpr int64_t kQuantBlock = 32;
struct BlockQ8_0 {
  uint16_t scale;  // fp16
  int8_t q[32];    // value = q * scale
};
struct BlockQ4_0 {
  uint16_t scale;   // fp16
  uint8_t q[16];    // low nibble: value j, high nibble: value j + 16; value = (nibble - 8) * scale
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18);

bool is_block_quantized(WeightType t);
// Bytes for one row of `cols` values; block types need cols % 32 == 0.
size_t weight_row_bytes(WeightType t, int64_t cols);

struct WeightMatrix {
  WeightType type = WeightType::F32;
  const std::byte* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;

  const std::byte* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  size_t bytes() const { return static_cast<size_t>(rows) * row_bytes; }
};

// Decodes row `r` into `out[cols]`.
void dequantize_row(const WeightMatrix& w, int64_t r, float* out);

// Encodes `cols` floats into one row of type `t` at `out` (weight_row_bytes(t, cols) bytes).
// Block types round as llama.cpp's reference quantizers do.
void quantize_row(WeightType t, const float* in, int64_t cols, std::byte* out);

}  // namespace glass
