// Weight types as one table, as ggml's type_traits and gemma.cpp's CompressTraits do: each
// type is an entry with its name, its GGUF id, its block geometry and its codecs. Code that
// handles weights asks the table instead of switching on the type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace glass {

// The llama.cpp weight types glass stores. Values are ours; ggml's ids are in the table.
enum class WeightType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K };

// A type's codecs work on whole blocks. `dequantize` is exact: it gives the float values
// ggml's to_float gives, bit for bit. `quantize` follows llama.cpp's reference quantizer
// (quantize_row_*_ref, no importance matrix), so that its bytes are llama-quantize's.
using DequantizeBlocks = void (*)(const std::byte* src, float* out, int64_t blocks);
using QuantizeBlocks = void (*)(const float* in, std::byte* out, int64_t blocks);

// How a type's SIMD dot kernels take the activations: as floats (a block type's blocks are
// decoded to floats first); quantized to int8 per block of 32 values with a float scale,
// as ggml's Q8_0 does on x86, so that the integer products are llama.cpp's; or quantized to
// 12 bits per block of 32 values (q4_1, q5_0, q5_1 in the lane layout; floats for their rows
// otherwise, see activation_format in kernels/weight_matrix.h) or per super-block of 256 (the
// k-quants), with a float scale: 16 times finer than llama.cpp's Q8_0 / Q8_1 / Q8_K, so that
// glass stays nearer the float result than llama.cpp.
enum class ActivationFormat : uint8_t { Float, Int8x32, Int12x32, Int12x256 };

struct WeightTypeTraits {
  WeightType type;
  const char* name;      // llama.cpp's name: "f32", "bf16", "q8_0", "q4_K"
  uint32_t ggml_type;    // the type id GGUF tensor infos carry
  int64_t block_values;  // values per block: 1 for the float types, 32, or 256 (k-quants)
  size_t block_bytes;
  DequantizeBlocks dequantize;  // null where glass cannot decode the type yet
  QuantizeBlocks quantize;      // null where glass cannot encode it yet
  ActivationFormat activation;  // what the SIMD dot kernels multiply the weights with
};

// Every type, in enum order.
std::span<const WeightTypeTraits> weight_types();
const WeightTypeTraits& traits(WeightType t);
// The entry for a GGUF type id; null for ids glass does not store (e.g. the IQ types).
const WeightTypeTraits* weight_type_of_ggml(uint32_t ggml_type);
// ggml's name for a type id glass does not store, for messages ("iq2_xxs", or "type 99").
std::string ggml_type_name(uint32_t ggml_type);

const char* weight_type_name(WeightType t);
// Case-insensitive ("q4_k" and "Q4_K" are q4_K).
bool parse_weight_type(std::string_view s, WeightType* out);
// The names of the types glass can encode (convert weights to), "f32, f16, ..." for messages.
std::string encodable_weight_type_names();

bool is_block_quantized(WeightType t);  // anything but the float types
// Bytes for `cols` values; cols must be a multiple of the type's block (see row_fits).
size_t weight_row_bytes(WeightType t, int64_t cols);
bool row_fits(WeightType t, int64_t cols);

// Decodes / encodes `count` values (a multiple of the type's block) through the table;
// throws glass::Unsupported naming the type when it has no codec.
void dequantize_values(WeightType t, const std::byte* src, float* out, int64_t count);
void quantize_values(WeightType t, const float* in, std::byte* out, int64_t count);

// std::roundf (halves away from zero) for |v| < 2^31, inline: the libm call was most of
// the time a q8_0 conversion at load takes.
inline int32_t round_half_away(float v) {
  const auto i = static_cast<int32_t>(v);  // toward zero; v - i is exact
  const float frac = v - static_cast<float>(i);
  return frac >= 0.5f ? i + 1 : frac <= -0.5f ? i - 1 : i;
}

}  // namespace glass
