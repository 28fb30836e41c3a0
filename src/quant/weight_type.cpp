#include "quant/weight_type.h"

#include <array>
#include <cctype>

#include "base/error.h"
#include "quant/codecs.h"

namespace glass {

namespace {

using W = WeightType;
using A = ActivationFormat;
namespace c = codecs;

// Block bytes from ggml-common.h; ids from ggml.h's enum ggml_type.
constexpr std::array<WeightTypeTraits, 13> kTypes = {{
    {W::F32, "f32", 0, 1, 4, c::dequantize_f32, c::quantize_f32, A::Float},
    {W::F16, "f16", 1, 1, 2, c::dequantize_f16, c::quantize_f16, A::Float},
    {W::BF16, "bf16", 30, 1, 2, c::dequantize_bf16, c::quantize_bf16, A::Float},
    {W::Q8_0, "q8_0", 8, 32, 34, c::dequantize_q8_0, c::quantize_q8_0, A::Int8x32},
    {W::Q4_0, "q4_0", 2, 32, 18, c::dequantize_q4_0, c::quantize_q4_0, A::Int8x32},
    {W::Q4_1, "q4_1", 3, 32, 20, c::dequantize_q4_1, c::quantize_q4_1, A::Int12x32},
    {W::Q5_0, "q5_0", 6, 32, 22, c::dequantize_q5_0, c::quantize_q5_0, A::Int12x32},
    {W::Q5_1, "q5_1", 7, 32, 24, c::dequantize_q5_1, c::quantize_q5_1, A::Int12x32},
    {W::Q2_K, "q2_K", 10, 256, 84, c::dequantize_q2_K, c::quantize_q2_K, A::Float},
    {W::Q3_K, "q3_K", 11, 256, 110, c::dequantize_q3_K, c::quantize_q3_K, A::Float},
    {W::Q4_K, "q4_K", 12, 256, 144, c::dequantize_q4_K, c::quantize_q4_K, A::Int12x256},
    {W::Q5_K, "q5_K", 13, 256, 176, c::dequantize_q5_K, c::quantize_q5_K, A::Int12x256},
    {W::Q6_K, "q6_K", 14, 256, 210, c::dequantize_q6_K, c::quantize_q6_K, A::Int12x256},
}};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < kTypes.size(); ++i)
    if (static_cast<size_t>(kTypes[i].type) != i) return false;
  return true;
}
static_assert(table_in_enum_order());

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

std::span<const WeightTypeTraits> weight_types() { return kTypes; }

const WeightTypeTraits& traits(WeightType t) { return kTypes[static_cast<size_t>(t)]; }

const WeightTypeTraits* weight_type_of_ggml(uint32_t ggml_type) {
  for (const WeightTypeTraits& t : kTypes)
    if (t.ggml_type == ggml_type) return &t;
  return nullptr;
}

std::string ggml_type_name(uint32_t ggml_type) {
  if (const WeightTypeTraits* t = weight_type_of_ggml(ggml_type)) return t->name;
  // The rest of ggml's enum, so a file in a type glass does not store is named.
  static constexpr std::pair<uint32_t, const char*> kOthers[] = {
      {9, "q8_1"},     {15, "q8_K"},  {16, "iq2_xxs"}, {17, "iq2_xs"}, {18, "iq3_xxs"}, {19, "iq1_s"},
      {20, "iq4_nl"},  {21, "iq3_s"}, {22, "iq2_s"},   {23, "iq4_xs"}, {24, "i8"},      {25, "i16"},
      {26, "i32"},     {27, "i64"},   {28, "f64"},     {29, "iq1_m"},  {34, "tq1_0"},   {35, "tq2_0"},
      {39, "mxfp4"}};
  for (const auto& [id, name] : kOthers)
    if (id == ggml_type) return name;
  return str_cat("type ", ggml_type);
}

const char* weight_type_name(WeightType t) { return traits(t).name; }

bool parse_weight_type(std::string_view s, WeightType* out) {
  for (const WeightTypeTraits& t : kTypes) {
    if (equal_ignoring_case(s, t.name)) {
      *out = t.type;
      return true;
    }
  }
  return false;
}

std::string encodable_weight_type_names() {
  std::string s;
  for (const WeightTypeTraits& t : kTypes)
    if (t.quantize != nullptr) s += s.empty() ? t.name : str_cat(", ", t.name);
  return s;
}

bool is_block_quantized(WeightType t) { return traits(t).block_values > 1; }

bool row_fits(WeightType t, int64_t cols) { return cols >= 0 && cols % traits(t).block_values == 0; }

size_t weight_row_bytes(WeightType t, int64_t cols) {
  const WeightTypeTraits& tt = traits(t);
  return static_cast<size_t>(cols / tt.block_values) * tt.block_bytes;
}

void dequantize_values(WeightType t, const std::byte* src, float* out, int64_t count) {
  const WeightTypeTraits& tt = traits(t);
  if (tt.dequantize == nullptr) refuse("glass cannot decode ", tt.name, " weights yet");
  if (count % tt.block_values != 0) fail(tt.name, " holds blocks of ", tt.block_values, " values, not ", count);
  tt.dequantize(src, out, count / tt.block_values);
}

void quantize_values(WeightType t, const float* in, std::byte* out, int64_t count) {
  const WeightTypeTraits& tt = traits(t);
  if (tt.quantize == nullptr) refuse("glass cannot encode ", tt.name, " weights yet");
  if (count % tt.block_values != 0)
    fail(tt.name, " needs rows whose length is a multiple of ", tt.block_values, ", got ", count);
  tt.quantize(in, out, count / tt.block_values);
}

}  // namespace glass
