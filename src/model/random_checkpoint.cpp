#include "model/random_checkpoint.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/half.h"
#include "base/mapped_file.h"
#include "model/tensor_names.h"

namespace glass {

namespace {

struct Preset {
  const char* name;
  Architecture architecture;
  int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, vocab;
  bool tied;
  int64_t max_positions;
  // Mixture of experts: experts, routed per token, expert intermediate size.
  int64_t experts = 0, experts_per_token = 0, expert_intermediate = 0;
};

// Shapes of the released checkpoints (the config.json of each), plus a tiny demo.
constexpr Preset kPresets[] = {
    {"demo", Architecture::Qwen2, 64, 4, 4, 2, 16, 192, 151936, false, 32768},
    {"qwen2.5-0.5b", Architecture::Qwen2, 896, 24, 14, 2, 64, 4864, 151936, true, 32768},
    {"qwen2.5-1.5b", Architecture::Qwen2, 1536, 28, 12, 2, 128, 8960, 151936, true, 32768},
    {"qwen2.5-3b", Architecture::Qwen2, 2048, 36, 16, 2, 128, 11008, 151936, true, 32768},
    {"qwen2.5-7b", Architecture::Qwen2, 3584, 28, 28, 4, 128, 18944, 152064, false, 32768},
    {"qwen2.5-14b", Architecture::Qwen2, 5120, 48, 40, 8, 128, 13824, 152064, false, 32768},
    {"qwen2.5-32b", Architecture::Qwen2, 5120, 64, 40, 8, 128, 27648, 152064, false, 32768},
    {"qwen2.5-72b", Architecture::Qwen2, 8192, 80, 64, 8, 128, 29568, 152064, false, 32768},
    {"qwen3-0.6b", Architecture::Qwen3, 1024, 28, 16, 8, 128, 3072, 151936, true, 40960},
    {"qwen3-1.7b", Architecture::Qwen3, 2048, 28, 16, 8, 128, 6144, 151936, true, 40960},
    {"qwen3-4b", Architecture::Qwen3, 2560, 36, 32, 8, 128, 9728, 151936, true, 40960},
    {"qwen3-8b", Architecture::Qwen3, 4096, 36, 32, 8, 128, 12288, 151936, false, 40960},
    {"qwen3-14b", Architecture::Qwen3, 5120, 40, 40, 8, 128, 17408, 151936, false, 40960},
    {"qwen3-32b", Architecture::Qwen3, 5120, 64, 64, 8, 128, 25600, 151936, false, 40960},
    {"qwen3-30b-a3b", Architecture::Qwen3Moe, 2048, 48, 32, 4, 128, 6144, 151936, false, 40960, 128, 8, 768},
    {"qwen3-235b-a22b", Architecture::Qwen3Moe, 4096, 94, 64, 4, 128, 12288, 151936, false, 40960, 128, 8, 1536},
};

// SplitMix64: tiny, fast, and the same on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float symmetric() { return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0); }
};

void make_dirs(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!partial.empty() && ::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
        fail(partial, ": cannot create folder: ", std::strerror(errno));
    }
    if (i < dir.size()) partial += dir[i];
  }
}

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

ModelConfig model_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name || "qwen2.5-" + name == p.name) {
      ModelConfig c;
      c.architecture = p.architecture;
      c.hidden_size = p.hidden;
      c.num_layers = p.layers;
      c.num_heads = p.heads;
      c.num_kv_heads = p.kv_heads;
      c.head_dim = p.head_dim;
      c.intermediate_size = p.intermediate;
      c.vocab_size = p.vocab;
      c.tie_word_embeddings = p.tied;
      c.max_position_embeddings = p.max_positions;
      c.rms_norm_eps = 1e-6;
      c.rope_theta = 1e6;
      c.attention_bias = p.architecture == Architecture::Qwen2;
      c.qk_norm = p.architecture != Architecture::Qwen2;
      c.num_experts = p.experts;
      c.num_experts_per_tok = p.experts_per_token;
      c.moe_intermediate_size = p.expert_intermediate;
      c.norm_topk_prob = p.experts > 0;
      return c;
    }
  }
  std::string known;
  for (const Preset& p : kPresets) known += (known.empty() ? "" : ", ") + std::string(p.name);
  fail("unknown model shape \"", name, "\"; known: ", known);
}

void write_random_checkpoint(const ModelConfig& c, const std::string& dir, const RandomCheckpointOptions& options) {
  if (options.dtype != DType::BF16 && options.dtype != DType::F16 && options.dtype != DType::F32)
    fail("random checkpoint: dtype must be BF16, F16 or F32, got ", dtype_name(options.dtype));
  make_dirs(dir);
  if (options.end_token >= 0 && (c.tie_word_embeddings || options.end_token >= c.vocab_size))
    fail("random checkpoint: end_token needs untied embeddings and an id below the vocabulary size");

  // Each tensor: its shape, the spread of its values and their centre.
  struct Spec {
    std::string name;
    std::vector<int64_t> shape;
    float scale, centre;
  };
  std::vector<Spec> specs;
  const int64_t h = c.hidden_size;
  const float in_h = 1.0f / std::sqrt(static_cast<float>(h));
  const TensorNames& n = kHuggingFaceTensorNames;
  // With an end token the layers write less into the residual stream, so the shared
  // embedding direction survives to the last layer.
  const float residual_write = options.end_token >= 0 ? 0.2f : 1.0f;
  auto add = [&](const char* pattern, int64_t layer, int64_t expert, std::vector<int64_t> shape, float scale,
                 float centre) { specs.push_back({tensor_name(pattern, layer, expert), std::move(shape), scale, centre}); };
  auto add_mlp = [&](const char* gate, const char* up, const char* down, int64_t l, int64_t e, int64_t inter) {
    add(gate, l, e, {inter, h}, in_h, 0.0f);
    add(up, l, e, {inter, h}, in_h, 0.0f);
    add(down, l, e, {h, inter}, residual_write / std::sqrt(static_cast<float>(inter)), 0.0f);
  };
  // Embedding scale 2/sqrt(hidden): tied logits then have a spread of about 2, so even
  // a random model's distributions are not one-hot.
  add(n.token_embedding, -1, -1, {c.vocab_size, h}, 2.0f * in_h, 0.0f);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    add(n.attn_norm, l, -1, {h}, 0.1f, 1.0f);
    // Each projection then its bias: the order (and so each tensor's random stream) of
    // the checkpoints written before Qwen3 existed, which keeps their bytes.
    add(n.attn_q, l, -1, {c.q_dim(), h}, in_h, 0.0f);
    if (c.attention_bias) add(n.attn_q_bias, l, -1, {c.q_dim()}, 0.1f, 0.0f);
    add(n.attn_k, l, -1, {c.kv_dim(), h}, in_h, 0.0f);
    if (c.attention_bias) add(n.attn_k_bias, l, -1, {c.kv_dim()}, 0.1f, 0.0f);
    add(n.attn_v, l, -1, {c.kv_dim(), h}, in_h, 0.0f);
    if (c.attention_bias) add(n.attn_v_bias, l, -1, {c.kv_dim()}, 0.1f, 0.0f);
    if (c.qk_norm) {
      add(n.attn_q_norm, l, -1, {c.head_dim}, 0.1f, 1.0f);
      add(n.attn_k_norm, l, -1, {c.head_dim}, 0.1f, 1.0f);
    }
    add(n.attn_o, l, -1, {h, c.q_dim()}, residual_write / std::sqrt(static_cast<float>(c.q_dim())), 0.0f);
    add(n.ffn_norm, l, -1, {h}, 0.1f, 1.0f);
    if (c.is_sparse_layer(l)) {
      add(n.ffn_router, l, -1, {c.num_experts, h}, in_h, 0.0f);
      for (int64_t e = 0; e < c.num_experts; ++e)
        add_mlp(n.expert_gate, n.expert_up, n.expert_down, l, e, c.moe_intermediate_size);
    } else {
      add_mlp(n.ffn_gate, n.ffn_up, n.ffn_down, l, -1, c.intermediate_size);
    }
  }
  add(n.output_norm, -1, -1, {h}, 0.1f, 1.0f);
  if (!c.tie_word_embeddings) add(n.output, -1, -1, {c.vocab_size, h}, in_h, 0.0f);

  std::vector<TensorToWrite> tensors;
  for (const Spec& s : specs) {
    int64_t numel = 1;
    for (int64_t d : s.shape) numel *= d;
    tensors.push_back({s.name, options.dtype, s.shape, nullptr, static_cast<size_t>(numel) * dtype_size(options.dtype)});
  }
  const float uniform_to_unit_std = std::sqrt(3.0f);  // uniform on [-a, a] has std a / sqrt(3)
  write_safetensors_streamed(
      dir + "/model.safetensors", tensors,
      [&](size_t i, std::byte* buffer) {
        const Spec& s = specs[i];
        SplitMix64 rng{options.seed * 0x100000001b3ull + i};  // each tensor its own stream
        const size_t numel = tensors[i].nbytes / dtype_size(options.dtype);
        const bool shaped = options.end_token >= 0 && (s.name == n.token_embedding || s.name == n.output);
        std::vector<float> offset;  // the shared direction, at the embedding's scale
        if (shaped) {
          SplitMix64 offset_rng{options.seed ^ 0x5eedull};
          const float embed_scale = specs[0].scale;
          for (int64_t col = 0; col < h; ++col) offset.push_back(embed_scale * uniform_to_unit_std * offset_rng.symmetric());
        }
        for (size_t j = 0; j < numel; ++j) {
          float v = s.centre + s.scale * uniform_to_unit_std * rng.symmetric();
          if (shaped) {
            const auto row = static_cast<int64_t>(j) / h, col = static_cast<int64_t>(j) % h;
            if (i == 0) v += offset[col];
            else if (row == options.end_token) v = options.end_token_gain * offset[col];
          }
          if (options.dtype == DType::F32) {
            std::memcpy(buffer + 4 * j, &v, 4);
          } else {
            const uint16_t b = options.dtype == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
            std::memcpy(buffer + 2 * j, &b, 2);
          }
        }
      },
      {{"format", "pt"}});

  ModelConfig written = c;
  written.torch_dtype = options.dtype == DType::BF16 ? "bfloat16" : options.dtype == DType::F16 ? "float16" : "float32";
  write_text(dir + "/config.json", written.to_json().dump(2) + "\n");
  // Qwen2.5-Instruct's generation_config.json, or Qwen3's.
  const Json generation =
      c.architecture == Architecture::Qwen2
          ? Json{{"bos_token_id", 151643}, {"pad_token_id", 151643}, {"do_sample", true},
                 {"eos_token_id", {151645, 151643}}, {"repetition_penalty", 1.05},
                 {"temperature", 0.7}, {"top_p", 0.8}, {"top_k", 20}}
          : Json{{"bos_token_id", 151643}, {"pad_token_id", 151643}, {"do_sample", true},
                 {"eos_token_id", {151645, 151643}}, {"temperature", 0.6}, {"top_p", 0.95}, {"top_k", 20}};
  write_text(dir + "/generation_config.json", generation.dump(2) + "\n");
}

}  // namespace glass
