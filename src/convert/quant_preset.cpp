#include "convert/quant_preset.h"

#include <cctype>
#include <cstdio>

namespace glass {

namespace {

using T = WeightType;

constexpr QuantPreset kPresets[] = {
    {"F32", 0, T::F32},       {"F16", 1, T::F16},       {"BF16", 32, T::BF16},    {"Q8_0", 7, T::Q8_0},
    {"Q4_0", 2, T::Q4_0},     {"Q4_1", 3, T::Q4_1},     {"Q5_0", 8, T::Q5_0},     {"Q5_1", 9, T::Q5_1},
    {"Q2_K", 10, T::Q2_K},    {"Q3_K_S", 11, T::Q3_K},  {"Q3_K_M", 12, T::Q3_K},  {"Q3_K_L", 13, T::Q3_K},
    {"Q4_K_S", 14, T::Q4_K},  {"Q4_K_M", 15, T::Q4_K},  {"Q5_K_S", 16, T::Q5_K},  {"Q5_K_M", 17, T::Q5_K},
    {"Q6_K", 18, T::Q6_K},
};
constexpr std::pair<const char*, const char*> kAliases[] = {{"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}};

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

bool named(const QuantPreset& p, const char* name) { return std::string_view(p.name) == name; }

// llama-quantize's tensor categories, from the name.
enum class Category { kOutput, kTokenEmbedding, kAttnV, kAttnK, kAttnQ, kAttnOutput, kFfnUp, kFfnGate, kFfnDown, kOther };

Category category_of(std::string_view name) {
  const auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight") return Category::kTokenEmbedding;
  if (has("attn_v.weight")) return Category::kAttnV;
  if (has("attn_k.weight")) return Category::kAttnK;
  if (has("attn_q.weight")) return Category::kAttnQ;
  if (has("attn_output.weight")) return Category::kAttnOutput;
  if (has("ffn_up")) return Category::kFfnUp;
  if (has("ffn_gate")) return Category::kFfnGate;
  if (has("ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// Whether llama-quantize quantizes the tensor at all.
bool quantizable(std::string_view name, int64_t n_dims) {
  if (n_dims < 2) return false;
  if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  if (name.find("_norm.weight") != std::string_view::npos) return false;
  if (name.find("ffn_gate_inp.weight") != std::string_view::npos) return false;  // the MoE router
  return true;
}

int64_t layer_of(std::string_view name) {
  int layer = -1;
  if (std::sscanf(std::string(name).c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

// The layers that get more bits in the _M mixes: the first and last eighth, and every
// third in between.
bool use_more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// The mix: which type the preset gives this tensor before the shape is considered.
WeightType mixed_type(const QuantPreset& p, const QuantModelShape& m, std::string_view name, int64_t row_length) {
  WeightType t = p.base;
  const Category c = category_of(name);
  const int64_t layer = layer_of(name), layers = m.layers;
  if (c == Category::kOutput || (m.tied_embeddings && c == Category::kTokenEmbedding)) {
    if (row_length % traits(t).block_values != 0) return T::Q8_0;
    return t == T::Q8_0 ? t : T::Q6_K;
  }
  switch (c) {
    case Category::kAttnV:
      if (named(p, "Q2_K")) t = m.gqa >= 4 ? T::Q4_K : T::Q3_K;
      else if (named(p, "Q3_K_M")) t = layer < 2 ? T::Q5_K : T::Q4_K;
      else if (named(p, "Q3_K_L")) t = T::Q5_K;
      else if ((named(p, "Q4_K_M") || named(p, "Q5_K_M")) && use_more_bits(layer, layers)) t = T::Q6_K;
      else if (named(p, "Q4_K_S") && layer < 4) t = T::Q5_K;
      // llama.cpp's 70B size class (Qwen2.5-72B's 80 layers): 8 query heads share each attn_v.
      if (m.size_class_70b && (t == T::Q3_K || t == T::Q4_K)) t = T::Q5_K;
      if (m.experts == 8) t = T::Q8_0;
      break;
    case Category::kAttnK:
      if (m.experts == 8) t = T::Q8_0;
      break;
    case Category::kFfnDown:
      if (named(p, "Q2_K")) t = T::Q3_K;
      else if (named(p, "Q3_K_M")) t = layer < layers / 16 ? T::Q5_K : T::Q4_K;
      else if (named(p, "Q3_K_L")) t = T::Q5_K;
      else if (named(p, "Q4_K_M")) {
        if (use_more_bits(layer, layers)) t = T::Q6_K;
      } else if (named(p, "Q5_K_M") && use_more_bits(layer, layers)) t = T::Q6_K;
      else if (named(p, "Q4_K_S") && layer < layers / 8) t = T::Q5_K;
      break;
    case Category::kAttnOutput:
      if (m.experts == 8) {
        if (named(p, "Q2_K") || named(p, "Q3_K_S") || named(p, "Q3_K_M") || named(p, "Q4_K_S") || named(p, "Q4_K_M"))
          t = T::Q5_K;
      } else if (named(p, "Q2_K")) {
        t = T::Q3_K;
      } else if (named(p, "Q3_K_M")) {
        t = T::Q4_K;
      } else if (named(p, "Q3_K_L")) {
        t = T::Q5_K;
      }
      break;
    default:
      break;
  }
  return t;
}

// A type whose block does not divide the row falls back to a 32-value type of about as
// many bits, or to F16 when even that does not fit.
QuantChoice fit(WeightType t, int64_t row_length) {
  if (row_length % traits(t).block_values == 0) return {t, false};
  WeightType f = t;
  switch (t) {
    case T::Q2_K:
    case T::Q3_K: f = T::Q4_0; break;
    case T::Q4_K: f = T::Q5_0; break;
    case T::Q5_K: f = T::Q5_1; break;
    case T::Q6_K: f = T::Q8_0; break;
    default: break;
  }
  if (row_length % traits(f).block_values != 0) f = T::F16;
  return {f, true};
}

}  // namespace

const QuantPreset* find_quant_preset(std::string_view name) {
  for (const auto& [alias, target] : kAliases)
    if (same_name(name, alias)) name = target;
  for (const QuantPreset& p : kPresets)
    if (same_name(name, p.name)) return &p;
  return nullptr;
}

std::string quant_preset_names() {
  std::string s;
  for (const QuantPreset& p : kPresets) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

QuantChoice quant_type_for(const QuantPreset& preset, bool pure, const QuantModelShape& model, std::string_view gguf_name,
                           int64_t n_dims, int64_t row_length, WeightType stored) {
  if (!quantizable(gguf_name, n_dims)) return {stored, false};
  if (!is_block_quantized(preset.base)) return {preset.base, false};  // F32, F16, BF16: no mix, no fallback
  const WeightType chosen = pure ? preset.base : mixed_type(preset, model, gguf_name, row_length);
  return fit(chosen, row_length);
}

}  // namespace glass
