#include "model/random_checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>

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

// `v` as the checkpoint stores it (rounded to BF16 or F16).
float stored_value(float v, DType dtype) {
  if (dtype == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
  if (dtype == DType::F16) return f16_to_f32(f32_to_f16(v));
  return v;
}

// The reply shaping of RandomCheckpointOptions (see random_checkpoint.h), in the weights.
//
// It reserves kDirections = kReplyStages + 2 orthonormal directions of the hidden state,
// drawn by the seed: a shared one b, and one per stage, e_0 ... e_K (K = kReplyStages).
// Every embedding row is its random part taken off those directions, plus kAmplitude
// along b and along its token's stage direction. The layers' writes into the residual
// stream (o_proj, down_proj) are taken off them too, so the last position's state reaches
// the final RMSNorm with exactly kAmplitude (b + e_k) in the reserved directions, k the
// stage of the last token: whatever the random layers do elsewhere, the model is a
// bigram model over stages. (They still set the state's length, which scales the
// logits below by a few percent, and add ~0.1 nat of per-token noise through the
// lm_head's random parts; writing at 0.2 of the usual scale keeps both small.)
//
// The lm_head reads those directions. Every row is its random part off the reserved
// directions (so that part adds only that ~0.1 nat), then -kSuppression nats along b:
// every token sits kSuppression nats below the chain's. A stage-j word's row adds
// kSuppression back along e_j (stay) and kSuppression + kAdvance along e_{j-1} (enter it
// from the stage before); the end token's, along e_K, adds kSuppression + kAdvance +
// log(kReplyWordsPerStage), so that leaving the last stage is as likely as leaving any
// other (one token against 8 words). Each row is divided by the final norm's weights,
// so a logit is the row's product with the normalised state itself. So from stage k the
// 8 words of stage k have logits of about 0, the 8 of stage k+1 about kAdvance, every
// other token about -kSuppression, and:
// - a sampled step advances with probability 1 / (1 + e^(-kAdvance / T)): 0.62 at
//   temperature 1, 0.67 at the demo's 0.7, 0.84 at 0.3; top_p cuts the (less likely)
//   stays first, which raises it: about 0.8 with the demo's top_p 0.8. A reply is
//   1 + K geometric stage lengths: at least K + 1 = 27 tokens. Measured on the demo over
//   100 seeds (glass chat, one message): 27 to 40, median 32, with its generation_config
//   (temperature 0.7, top_k 20, top_p 0.8); 32 to 56, median 41, at temperature 1 with
//   no top_k, top_p or repetition penalty;
// - greedy decoding walks the chain one stage a token: K + 1 tokens;
// - a top_k of 16 or more (the demo's generation_config: 20) keeps both groups;
// - logits near 0 leave repetition_penalty (which divides or multiplies a logit) without
//   effect;
// - with kSuppression 24, the ~150k other tokens together get about 150000 * e^-24 <
//   1e-5 of the probability at temperature 1 without top_k, so a stray token (after which
//   the chain would start again at stage 1) is rare even then.
class ReplyShape {
 public:
  static constexpr float kAmplitude = 48.0f;
  static constexpr float kSuppression = 24.0f;
  static constexpr float kAdvance = 0.5f;

  // `final_norm`: the stored weights of the final RMSNorm, which the lm_head rows divide
  // by so that a logit is the row's dot product with the normalised state itself.
  ReplyShape(const ModelConfig& c, const RandomCheckpointOptions& options, std::vector<float> final_norm,
             float embedding_random_length)
      : h_(c.hidden_size), end_(options.reply_end), final_norm_(std::move(final_norm)),
        stage_(static_cast<size_t>(c.vocab_size), 0) {
    const std::vector<std::vector<int32_t>> stages = reply_stages(options);
    for (size_t k = 0; k < stages.size(); ++k)
      for (int32_t id : stages[k]) stage_[static_cast<size_t>(id)] = static_cast<int16_t>(k + 1);
    // Gram-Schmidt on vectors drawn from the seed: b first, then e_0 ... e_K.
    SplitMix64 rng{options.seed ^ 0x57a9e5ull};
    for (size_t d = 0; d < kDirections; ++d) {
      std::vector<double> v(static_cast<size_t>(h_));
      for (double& x : v) x = rng.symmetric();
      for (const std::vector<double>& u : directions_) {
        double dot = 0;
        for (int64_t i = 0; i < h_; ++i) dot += v[i] * u[i];
        for (int64_t i = 0; i < h_; ++i) v[i] -= dot * u[i];
      }
      double norm = 0;
      for (double x : v) norm += x * x;
      for (double& x : v) x /= std::sqrt(norm);
      directions_.push_back(std::move(v));
    }
    // A reserved direction's coordinate in the normalised state (RMSNorm: sqrt(h) x / |x|),
    // with |x|^2 about 2 kAmplitude^2 + the random part's; one nat along it is 1/unit.
    const double length = std::sqrt(2.0 * kAmplitude * kAmplitude + embedding_random_length * embedding_random_length);
    unit_ = std::sqrt(static_cast<double>(h_)) * kAmplitude / length;
  }

  // The random part, off the reserved directions, plus kAmplitude along b and the token's
  // stage direction.
  void shape_embedding_row(int64_t token, float* row) const {
    std::vector<double> r = off_reserved(row);
    const std::vector<double>& stage = directions_[1 + static_cast<size_t>(stage_[static_cast<size_t>(token)])];
    for (int64_t i = 0; i < h_; ++i) row[i] = static_cast<float>(r[i] + kAmplitude * (directions_[0][i] + stage[i]));
  }

  void shape_lm_head_row(int64_t token, float* row) const {
    std::vector<double> r = off_reserved(row);
    // Logits (in nats at temperature 1) this row gives along each reserved direction.
    add(r, 0, -kSuppression);
    const int stage = stage_[static_cast<size_t>(token)];
    if (stage > 0) {
      add(r, 1 + stage, kSuppression);                 // stay in its stage
      add(r, 1 + stage - 1, kSuppression + kAdvance);  // or enter it from the one before
    } else if (token == end_) {
      add(r, 1 + kReplyStages, kSuppression + kAdvance + std::log(static_cast<double>(kReplyWordsPerStage)));
    }
    for (int64_t i = 0; i < h_; ++i) row[i] = static_cast<float>(r[i] / final_norm_[i]);
  }

  // A layer's write into the residual stream (o_proj, down_proj: [hidden, inputs]) is
  // projected off the reserved directions, column by column, so that no layer moves the
  // state along them: the stage the last token set is what the lm_head reads, whatever the
  // random layers do with the rest (they still shape the state's length, and so the
  // logits' scale a little, and add a ~0.1-nat random part through the lm_head's random
  // rows). `parts` (kDirections x inputs) sums, over the rows `output` of the matrix,
  // direction[output] * row; remove_reserved_parts then subtracts each column's parts.
  static constexpr size_t kDirections = kReplyStages + 2;
  void add_reserved_parts(int64_t output, const std::vector<float>& row, std::vector<double>& parts) const {
    for (size_t d = 0; d < kDirections; ++d)
      for (size_t col = 0; col < row.size(); ++col) parts[d * row.size() + col] += directions_[d][output] * row[col];
  }
  void remove_reserved_parts(int64_t output, std::vector<float>& row, const std::vector<double>& parts) const {
    for (size_t col = 0; col < row.size(); ++col) {
      double v = row[col];
      for (size_t d = 0; d < kDirections; ++d) v -= directions_[d][output] * parts[d * row.size() + col];
      row[col] = static_cast<float>(v);
    }
  }

 private:
  std::vector<double> off_reserved(const float* row) const {
    std::vector<double> r(row, row + h_);
    for (const std::vector<double>& u : directions_) {
      double dot = 0;
      for (int64_t i = 0; i < h_; ++i) dot += r[i] * u[i];
      for (int64_t i = 0; i < h_; ++i) r[i] -= dot * u[i];
    }
    return r;
  }

  void add(std::vector<double>& r, size_t direction, double nats) const {
    for (int64_t i = 0; i < h_; ++i) r[i] += nats / unit_ * directions_[direction][i];
  }

  int64_t h_;
  int32_t end_;
  std::vector<float> final_norm_;
  std::vector<int16_t> stage_;                   // per token: 0, or its chain stage 1..K
  std::vector<std::vector<double>> directions_;  // b, e_0 ... e_K
  double unit_ = 1;
};

}  // namespace

std::vector<std::vector<int32_t>> reply_stages(const RandomCheckpointOptions& options) {
  constexpr size_t kWords = static_cast<size_t>(kReplyStages) * kReplyWordsPerStage;
  if (options.reply_words.size() < kWords)
    fail("random checkpoint: reply shaping needs ", kWords, " candidate words, got ", options.reply_words.size());
  // A partial Fisher-Yates shuffle: the seed's first kWords candidates.
  std::vector<int32_t> words = options.reply_words;
  SplitMix64 rng{options.seed ^ 0x3030d5ull};
  for (size_t i = 0; i < kWords; ++i) std::swap(words[i], words[i + rng.next() % (words.size() - i)]);
  std::vector<std::vector<int32_t>> stages;
  for (size_t k = 0; k < static_cast<size_t>(kReplyStages); ++k)
    stages.emplace_back(words.begin() + static_cast<long>(k * kReplyWordsPerStage),
                        words.begin() + static_cast<long>((k + 1) * kReplyWordsPerStage));
  return stages;
}

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
  const bool shaped = options.reply_end >= 0;
  if (shaped) {
    if (c.tie_word_embeddings) fail("random checkpoint: reply shaping needs untied embeddings (an lm_head of its own)");
    if (c.hidden_size < 64)
      fail("random checkpoint: reply shaping needs a hidden size of at least 64, got ", c.hidden_size);
    if (options.reply_end >= c.vocab_size)
      fail("random checkpoint: the reply end token ", options.reply_end, " is not below the vocabulary size ",
           c.vocab_size);
    std::vector<int32_t> words = options.reply_words;
    std::sort(words.begin(), words.end());
    if (std::adjacent_find(words.begin(), words.end()) != words.end())
      fail("random checkpoint: the reply words repeat a token");
    for (int32_t id : words)
      if (id < 0 || id >= c.vocab_size || id == options.reply_end)
        fail("random checkpoint: reply word ", id,
             " is not a token below the vocabulary size other than the end token");
  }

  // Each tensor: its shape, the spread of its values and their centre.
  struct Spec {
    std::string name;
    std::vector<int64_t> shape;
    float scale, centre;
    bool writes_residual = false;  // attention's output projection, an MLP's down projection
  };
  std::vector<Spec> specs;
  const int64_t h = c.hidden_size;
  const float in_h = 1.0f / std::sqrt(static_cast<float>(h));
  const TensorNames& n = kHuggingFaceTensorNames;
  // Shaped, the layers write less into the residual stream: their writes then change the
  // length of the state the lm_head reads, and add noise to its logits, only a little
  // (ReplyShape).
  const float residual_write = shaped ? 0.2f : 1.0f;
  auto add = [&](const char* pattern, int64_t layer, int64_t expert, std::vector<int64_t> shape, float scale,
                 float centre, bool writes_residual = false) {
    specs.push_back({tensor_name(pattern, layer, expert), std::move(shape), scale, centre, writes_residual});
  };
  auto add_mlp = [&](const char* gate, const char* up, const char* down, int64_t l, int64_t e, int64_t inter) {
    add(gate, l, e, {inter, h}, in_h, 0.0f);
    add(up, l, e, {inter, h}, in_h, 0.0f);
    add(down, l, e, {h, inter}, residual_write / std::sqrt(static_cast<float>(inter)), 0.0f, true);
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
    add(n.attn_o, l, -1, {h, c.q_dim()}, residual_write / std::sqrt(static_cast<float>(c.q_dim())), 0.0f, true);
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
  // Each tensor its own stream.
  auto tensor_rng = [&](size_t i) { return SplitMix64{options.seed * 0x100000001b3ull + i}; };
  std::optional<ReplyShape> shape;
  if (shaped) {
    // The final norm's weights as stored: its tensor's stream, replayed.
    size_t norm_index = 0;
    while (specs[norm_index].name != n.output_norm) ++norm_index;
    SplitMix64 rng = tensor_rng(norm_index);
    std::vector<float> final_norm;
    for (int64_t j = 0; j < h; ++j)
      final_norm.push_back(stored_value(
          specs[norm_index].centre + specs[norm_index].scale * uniform_to_unit_std * rng.symmetric(), options.dtype));
    // An embedding row's random part: h values of spread specs[0].scale.
    shape.emplace(c, options, std::move(final_norm), specs[0].scale * std::sqrt(static_cast<float>(h)));
  }
  write_safetensors_streamed(
      dir + "/model.safetensors", tensors,
      [&](size_t i, std::byte* buffer) {
        const Spec& s = specs[i];
        SplitMix64 rng = tensor_rng(i);
        const size_t numel = tensors[i].nbytes / dtype_size(options.dtype);
        const bool embedding = shape && s.name == n.token_embedding, lm_head = shape && s.name == n.output;
        const bool writes_residual = shape && s.writes_residual;
        const size_t row_length = static_cast<size_t>(s.shape.back());
        std::vector<float> row(row_length);
        auto draw_row = [&](SplitMix64& stream) {
          for (float& v : row) v = s.centre + s.scale * uniform_to_unit_std * stream.symmetric();
        };
        // A residual write's columns lose their parts along the reserved directions: a
        // first pass over a copy of the stream sums them up.
        std::vector<double> reserved_parts;
        if (writes_residual) {
          SplitMix64 first_pass = rng;
          reserved_parts.assign(ReplyShape::kDirections * row_length, 0.0);
          for (size_t start = 0; start < numel; start += row_length) {
            draw_row(first_pass);
            shape->add_reserved_parts(static_cast<int64_t>(start / row_length), row, reserved_parts);
          }
        }
        for (size_t start = 0; start < numel; start += row_length) {
          draw_row(rng);
          const auto index = static_cast<int64_t>(start / row_length);  // a token, or an output dimension
          if (embedding) shape->shape_embedding_row(index, row.data());
          if (lm_head) shape->shape_lm_head_row(index, row.data());
          if (writes_residual) shape->remove_reserved_parts(index, row, reserved_parts);
          for (size_t k = 0; k < row_length; ++k) {
            const size_t j = start + k;
            if (options.dtype == DType::F32) {
              std::memcpy(buffer + 4 * j, &row[k], 4);
            } else {
              const uint16_t b = options.dtype == DType::BF16 ? f32_to_bf16(row[k]) : f32_to_f16(row[k]);
              std::memcpy(buffer + 2 * j, &b, 2);
            }
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
