// The block layouts of llama.cpp's quantized types (ggml-common.h), byte for byte.
#pragma once

#include <cstdint>

namespace glass {

inline constexpr int64_t kQuantBlock = 32;   // values per block of the 32-value types
inline constexpr int64_t kSuperBlock = 256;  // values per super-block of the k-quants

struct BlockQ8_0 {
  uint16_t scale;  // fp16
  int8_t q[32];    // value = q * scale
};
struct BlockQ4_0 {
  uint16_t scale;  // fp16
  uint8_t q[16];   // low nibble: value j, high nibble: value j + 16; value = (nibble - 8) * scale
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18);

}  // namespace glass
