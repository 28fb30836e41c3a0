// What `glass convert --type` names: a file type as llama-quantize names it (Q4_K_M, Q8_0,
// F16, ...), and which weight type each tensor gets under it. The mixes follow
// llama-quantize's rules (llama-quant.cpp, llama_tensor_get_type) for the Qwen family:
// which tensors get more bits in which layers, the output / tied embedding rule, and the
// fallback of a type whose block does not divide a row (Qwen2.5-0.5B's 896 columns).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "quant/weight_type.h"

namespace glass {

struct QuantPreset {
  const char* name;    // "Q4_K_M"
  uint32_t file_type;  // general.file_type (llama_ftype)
  WeightType base;     // the type most tensors get
};

// The preset named `name` (case-insensitive; Q4_K, Q5_K, Q3_K are Q4_K_M, Q5_K_M, Q3_K_M
// as in llama-quantize); null if there is none.
const QuantPreset* find_quant_preset(std::string_view name);
// "F32, F16, BF16, Q8_0, ..." for messages and help.
std::string quant_preset_names();

// What the rules need to know about the model.
struct QuantModelShape {
  int64_t layers = 0;
  int64_t experts = 0;      // 0 for a dense model
  int64_t gqa = 1;          // query heads per KV head
  bool tied_embeddings = false;
  bool size_class_70b = false;  // llama.cpp's LLM_TYPE_70B (Qwen2 with 80 layers: Qwen2.5-72B)
};

// Why a tensor did not get the type the rules chose (its row is not a whole number of
// that type's blocks), for the converter's report.
struct QuantChoice {
  WeightType type;
  bool fell_back = false;
};

// The type of the tensor named `gguf_name` (llama.cpp's name: "blk.3.attn_v.weight") with
// `n_dims` dimensions and rows of `row_length` values, stored as `stored` now. Tensors
// llama-quantize never quantizes (1-D ones, norms, the MoE router) keep `stored`. `pure`:
// every other tensor gets the preset's base type (llama-quantize --pure), fallback
// included.
QuantChoice quant_type_for(const QuantPreset& preset, bool pure, const QuantModelShape& model,
                           std::string_view gguf_name, int64_t n_dims, int64_t row_length, WeightType stored);

}  // namespace glass
