#include "model/random_checkpoint.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/half.h"
#include "base/mapped_file.h"

namespace glass {

namespace {

struct Preset {
  const char* name;
  int64_t hidden, layers, heads, kv_heads, intermediate, vocab;
  bool tied;
};

// Shapes of the released Qwen2.5 checkpoints (config.json of each), plus a tiny demo.
constexpr Preset kPresets[] = {
    {"demo", 64, 4, 4, 2, 192, 151936, false},
    {"qwen2.5-0.5b", 896, 24, 14, 2, 4864, 151936, true},
    {"qwen2.5-1.5b", 1536, 28, 12, 2, 8960, 151936, true},
    {"qwen2.5-3b", 2048, 36, 16, 2, 11008, 151936, true},
    {"qwen2.5-7b", 3584, 28, 28, 4, 18944, 152064, false},
    {"qwen2.5-14b", 5120, 48, 40, 8, 13824, 152064, false},
    {"qwen2.5-32b", 5120, 64, 40, 8, 27648, 152064, false},
    {"qwen2.5-72b", 8192, 80, 64, 8, 29568, 152064, false},
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
      c.hidden_size = p.hidden;
      c.num_layers = p.layers;
      c.num_heads = p.heads;
      c.num_kv_heads = p.kv_heads;
      c.head_dim = p.hidden / p.heads;
      c.intermediate_size = p.intermediate;
      c.vocab_size = p.vocab;
      c.tie_word_embeddings = p.tied;
      c.max_position_embeddings = 32768;
      c.rms_norm_eps = 1e-6;
      c.rope_theta = 1e6;
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
  // Embedding scale 2/sqrt(hidden): tied logits then have a spread of about 2, so even
  // a random model's distributions are not one-hot.
  specs.push_back({"model.embed_tokens.weight", {c.vocab_size, h}, 2.0f * in_h, 0.0f});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    specs.push_back({p + "input_layernorm.weight", {h}, 0.1f, 1.0f});
    specs.push_back({p + "self_attn.q_proj.weight", {c.q_dim(), h}, in_h, 0.0f});
    specs.push_back({p + "self_attn.q_proj.bias", {c.q_dim()}, 0.1f, 0.0f});
    specs.push_back({p + "self_attn.k_proj.weight", {c.kv_dim(), h}, in_h, 0.0f});
    specs.push_back({p + "self_attn.k_proj.bias", {c.kv_dim()}, 0.1f, 0.0f});
    specs.push_back({p + "self_attn.v_proj.weight", {c.kv_dim(), h}, in_h, 0.0f});
    specs.push_back({p + "self_attn.v_proj.bias", {c.kv_dim()}, 0.1f, 0.0f});
    // With an end token the layers write less into the residual stream, so the shared
    // embedding direction survives to the last layer.
    const float residual_write = options.end_token >= 0 ? 0.2f : 1.0f;
    specs.push_back({p + "self_attn.o_proj.weight", {h, c.q_dim()},
                     residual_write / std::sqrt(static_cast<float>(c.q_dim())), 0.0f});
    specs.push_back({p + "post_attention_layernorm.weight", {h}, 0.1f, 1.0f});
    specs.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, h}, in_h, 0.0f});
    specs.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, h}, in_h, 0.0f});
    specs.push_back({p + "mlp.down_proj.weight", {h, c.intermediate_size},
                     residual_write / std::sqrt(static_cast<float>(c.intermediate_size)), 0.0f});
  }
  specs.push_back({"model.norm.weight", {h}, 0.1f, 1.0f});
  if (!c.tie_word_embeddings) specs.push_back({"lm_head.weight", {c.vocab_size, h}, in_h, 0.0f});

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
        const bool shaped = options.end_token >= 0 && (s.name == "model.embed_tokens.weight" || s.name == "lm_head.weight");
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
  const Json generation = {{"bos_token_id", 151643}, {"pad_token_id", 151643}, {"do_sample", true},
                           {"eos_token_id", {151645, 151643}}, {"repetition_penalty", 1.05},
                           {"temperature", 0.7}, {"top_p", 0.8}, {"top_k", 20}};
  write_text(dir + "/generation_config.json", generation.dump(2) + "\n");
}

}  // namespace glass
