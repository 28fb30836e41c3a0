#include "model/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "kernels/reference_kernels.h"

namespace glass {

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool stored_weight_type(DType d, WeightType* out) {
  switch (d) {
    case DType::F32: *out = WeightType::F32; return true;
    case DType::F16: *out = WeightType::F16; return true;
    case DType::BF16: *out = WeightType::BF16; return true;
    default: return false;
  }
}

// The axes arrive as an initializer_list (an array on the caller's stack), so without a
// sink a stage costs one pointer test and no allocation.
void emit(TraceSink* trace, const char* stage, int layer, const float* data, std::initializer_list<Axis> axes,
          const Batch& batch) {
  if (trace == nullptr || !trace->wants(stage, layer)) return;
  StageTensor t;
  t.stage = stage;
  t.layer = layer;
  t.data = data;
  t.axes = axes;
  t.positions = batch.positions.data();
  t.tokens = batch.tokens.data();
  trace->record(t);
}

}  // namespace

DecoderModel DecoderModel::load(const std::string& dir, const LoadOptions& options) {
  return DecoderModel(std::make_shared<const Checkpoint>(dir), options);
}

const TensorInfo& DecoderModel::checked(const std::string& name, const std::vector<int64_t>& shape) {
  const TensorInfo& t = checkpoint_->get(name);
  if (t.shape != shape)
    fail(t.file, ": tensor \"", name, "\" has shape ", t.shape_string(), " but ", checkpoint_->config_path(),
         " implies ", shape_str(shape));
  WeightType wt;
  if (!stored_weight_type(t.dtype, &wt))
    fail(t.file, ": tensor \"", name, "\" has dtype ", dtype_name(t.dtype),
         "; supported weight dtypes are BF16, F16 and F32");
  return t;
}

WeightMatrix DecoderModel::matrix(const std::string& name, int64_t rows, int64_t cols, const LoadOptions& options) {
  const TensorInfo& t = checked(name, {rows, cols});
  WeightMatrix w;
  stored_weight_type(t.dtype, &w.type);
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = weight_row_bytes(w.type, cols);
  w.data = t.data;
  const bool aligned = reinterpret_cast<uintptr_t>(t.data) % dtype_size(t.dtype) == 0;
  const WeightType target = options.weight_type.value_or(w.type);
  if (target == w.type && aligned) return w;  // used in place from the map

  if (is_block_quantized(target) && cols % kQuantBlock != 0)
    fail(t.file, ": tensor \"", name, "\" has rows of ", cols, " values; ", weight_type_name(target),
         " needs a multiple of 32");
  // Realign (the header length was odd) or convert, row by row.
  WeightMatrix src = w;
  if (!aligned) {
    auto copy = std::make_unique<std::byte[]>(t.nbytes);
    std::memcpy(copy.get(), t.data, t.nbytes);
    src.data = copy.get();
    owned_.push_back(std::move(copy));
    if (target == w.type) return src;
  }
  WeightMatrix dst = w;
  dst.type = target;
  dst.row_bytes = weight_row_bytes(target, cols);
  auto buffer = std::make_unique<std::byte[]>(dst.row_bytes * static_cast<size_t>(rows));
  // Rows convert independently; a few threads make q8_0 / q4_0 loading about as many
  // times faster (the rounding is most of a load's time).
  const int64_t workers = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::min<int64_t>(8, rows));
  auto convert = [&](int64_t begin, int64_t end) {
    std::vector<float> values(static_cast<size_t>(cols));
    for (int64_t r = begin; r < end; ++r) {
      dequantize_row(src, r, values.data());
      quantize_row(target, values.data(), cols, buffer.get() + static_cast<size_t>(r) * dst.row_bytes);
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int64_t i = 1; i < workers; ++i) threads.emplace_back(convert, rows * i / workers, rows * (i + 1) / workers);
    convert(0, rows / workers);
  }
  dst.data = buffer.get();
  if (is_block_quantized(target) && rows >= kInterleaveRows) {  // the layout the int8 kernels read fastest
    auto interleaved = std::make_unique<std::byte[]>(dst.bytes());
    dst = interleave_rows(dst, interleaved.get());
    buffer = std::move(interleaved);
  }
  owned_.push_back(std::move(buffer));
  return dst;
}

std::vector<float> DecoderModel::vector(const std::string& name, int64_t size) {
  const TensorInfo& t = checked(name, {size});
  std::vector<float> out(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    uint16_t h;
    switch (t.dtype) {
      case DType::F32: std::memcpy(&out[i], t.data + 4 * i, 4); break;
      case DType::BF16: std::memcpy(&h, t.data + 2 * i, 2); out[i] = bf16_to_f32(h); break;
      default: std::memcpy(&h, t.data + 2 * i, 2); out[i] = f16_to_f32(h); break;
    }
  }
  return out;
}

DecoderModel::DecoderModel(std::shared_ptr<const Checkpoint> checkpoint, const LoadOptions& options)
    : checkpoint_(std::move(checkpoint)) {
  const ModelConfig& c = checkpoint_->config();
  const int64_t h = c.hidden_size;
  embed_ = matrix("model.embed_tokens.weight", c.vocab_size, h, options);
  lm_head_ = c.tie_word_embeddings ? embed_ : matrix("lm_head.weight", c.vocab_size, h, options);
  final_norm_ = vector("model.norm.weight", h);
  layers_.resize(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Layer& L = layers_[l];
    L.input_norm = vector(p + "input_layernorm.weight", h);
    L.post_norm = vector(p + "post_attention_layernorm.weight", h);
    L.q = matrix(p + "self_attn.q_proj.weight", c.q_dim(), h, options);
    L.k = matrix(p + "self_attn.k_proj.weight", c.kv_dim(), h, options);
    L.v = matrix(p + "self_attn.v_proj.weight", c.kv_dim(), h, options);
    L.q_bias = vector(p + "self_attn.q_proj.bias", c.q_dim());
    L.k_bias = vector(p + "self_attn.k_proj.bias", c.kv_dim());
    L.v_bias = vector(p + "self_attn.v_proj.bias", c.kv_dim());
    L.o = matrix(p + "self_attn.o_proj.weight", h, c.q_dim(), options);
    L.gate = matrix(p + "mlp.gate_proj.weight", c.intermediate_size, h, options);
    L.up = matrix(p + "mlp.up_proj.weight", c.intermediate_size, h, options);
    L.down = matrix(p + "mlp.down_proj.weight", h, c.intermediate_size, options);
  }
}

size_t DecoderModel::matrix_bytes() const {
  size_t n = embed_.bytes();
  if (lm_head_.data != embed_.data) n += lm_head_.bytes();
  for (const Layer& L : layers_)
    for (const WeightMatrix* w : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}) n += w->bytes();
  return n;
}

size_t DecoderModel::decode_weight_bytes() const {
  size_t n = lm_head_.bytes();
  for (const Layer& L : layers_)
    for (const WeightMatrix* w : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}) n += w->bytes();
  return n;
}

void DecoderModel::project_to_vocab(const float* x, int64_t n, Kernels& k, std::vector<float>& logits) const {
  const ModelConfig& c = config();
  std::vector<float> normed(static_cast<size_t>(n * c.hidden_size));
  k.rmsnorm(x, final_norm_.data(), n, c.hidden_size, static_cast<float>(c.rms_norm_eps), normed.data());
  logits.resize(static_cast<size_t>(n * c.vocab_size));
  k.matmul(lm_head_, normed.data(), n, nullptr, logits.data());
}

void DecoderModel::forward(const Batch& batch, KVCache& cache, Kernels& k, std::vector<float>& logits,
                         TraceSink* trace) const {
  const ModelConfig& c = config();
  const int64_t n = batch.size();
  const int64_t H = c.hidden_size, nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
  const int64_t I = c.intermediate_size;
  const auto eps = static_cast<float>(c.rms_norm_eps);
  logits.clear();
  if (n == 0) return;

  // Validate and reserve before computing anything: a bad batch fails before any K/V is written.
  for (int64_t t = 0; t < n; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= c.vocab_size)
      fail("token id ", batch.tokens[t], " is out of range: the model's vocabulary has ", c.vocab_size, " rows");
    if (batch.positions[t] < 0) fail("position ", batch.positions[t], " is negative");
  }
  for (int64_t t = 0; t < n; ++t)
    if (!cache.reserve(batch.sequences[t], batch.positions[t] + 1))
      fail("KV cache is full: no free block for position ", batch.positions[t], " of sequence ", batch.sequences[t]);

  std::vector<float> x(n * H), xb(n * H), q(n * nh * hd), kk(n * nkv * hd), v(n * nkv * hd);
  std::vector<float> att(n * nh * hd), gate(n * I);

  // Token embedding.
  for (int64_t t = 0; t < n; ++t) dequantize_row(embed_, batch.tokens[t], &x[t * H]);
  emit(trace, "embed", -1, x.data(), {{"pos", n}, {"hidden", H}}, batch);

  // RoPE angles for each row's position: inv_freq_i = theta^(-2i / head_dim).
  const int64_t half = hd / 2;
  std::vector<float> cos(n * half), sin(n * half);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd));
      const double angle = batch.positions[t] * inv_freq;
      cos[t * half + i] = static_cast<float>(std::cos(angle));
      sin[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }

  // Each row attends to positions 0..pos of its own sequence.
  std::vector<AttentionRow> rows(n);
  int64_t max_len = 0;
  for (int64_t t = 0; t < n; ++t) {
    rows[t].block_ids = cache.block_table(batch.sequences[t]).data();
    rows[t].length = batch.positions[t] + 1;
    max_len = std::max(max_len, rows[t].length);
  }
  // Only for the trace: copies computed beside the real path (see below).
  std::vector<float> attn_weights, attn_scores, att_seen, gate_seen, up_seen;

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const Layer& w = layers_[l];
    const int layer = static_cast<int>(l);

    // Attention block: x += o_proj(attention(rope(q), rope(k), v)).
    k.rmsnorm(x.data(), w.input_norm.data(), n, H, eps, xb.data());
    emit(trace, "attn_norm", layer, xb.data(), {{"pos", n}, {"hidden", H}}, batch);
    const MatmulOutput qkv[3] = {{&w.q, w.q_bias.data(), q.data()},
                                 {&w.k, w.k_bias.data(), kk.data()},
                                 {&w.v, w.v_bias.data(), v.data()}};
    k.matmul_multi(qkv, 3, xb.data(), n);
    emit(trace, "q", layer, q.data(), {{"pos", n}, {"heads", nh}, {"dim", hd}}, batch);
    emit(trace, "k", layer, kk.data(), {{"pos", n}, {"kv_heads", nkv}, {"dim", hd}}, batch);
    emit(trace, "v", layer, v.data(), {{"pos", n}, {"kv_heads", nkv}, {"dim", hd}}, batch);
    k.rope(q.data(), n, nh, hd, cos.data(), sin.data());
    k.rope(kk.data(), n, nkv, hd, cos.data(), sin.data());
    emit(trace, "q_rope", layer, q.data(), {{"pos", n}, {"heads", nh}, {"dim", hd}}, batch);
    emit(trace, "k_rope", layer, kk.data(), {{"pos", n}, {"kv_heads", nkv}, {"dim", hd}}, batch);
    for (int64_t t = 0; t < n; ++t) {
      store_kv_row(cache.type(), &kk[t * nkv * hd], nkv * hd, cache.slot(layer, 0, batch.sequences[t], batch.positions[t]));
      store_kv_row(cache.type(), &v[t * nkv * hd], nkv * hd, cache.slot(layer, 1, batch.sequences[t], batch.positions[t]));
    }
    AttentionArgs a;
    a.q = q.data();
    a.out = att.data();
    a.n = n;
    a.heads = nh;
    a.kv_heads = nkv;
    a.head_dim = hd;
    a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    a.kv_type = cache.type();
    a.k_base = cache.layer_base(layer, 0);
    a.v_base = cache.layer_base(layer, 1);
    a.block_stride = cache.block_stride();
    a.block_size = cache.block_size();
    a.rows = rows.data();
    k.attention(a);
    // The trace observes and never changes what is computed: scores and weights come
    // from a second attention call (the fast kernels hand it to the reference, which
    // keeps them) whose output is thrown away, so attn_out is what an untraced run gets.
    const bool want_scores = trace != nullptr && trace->wants("attn_scores", layer);
    const bool want_weights = trace != nullptr && trace->wants("attn_weights", layer);
    if (want_scores || want_weights) {
      AttentionArgs seen = a;
      att_seen.resize(att.size());
      seen.out = att_seen.data();
      seen.weights_stride = max_len;
      if (want_scores) {
        attn_scores.assign(static_cast<size_t>(n * nh * max_len), 0.0f);
        seen.scores_out = attn_scores.data();
      }
      if (want_weights) {
        attn_weights.assign(static_cast<size_t>(n * nh * max_len), 0.0f);
        seen.weights_out = attn_weights.data();
      }
      k.attention(seen);
    }
    if (want_scores)
      emit(trace, "attn_scores", layer, attn_scores.data(), {{"pos", n}, {"heads", nh}, {"keys", max_len}}, batch);
    if (want_weights)
      emit(trace, "attn_weights", layer, attn_weights.data(), {{"pos", n}, {"heads", nh}, {"keys", max_len}}, batch);
    emit(trace, "attn_out", layer, att.data(), {{"pos", n}, {"heads", nh}, {"dim", hd}}, batch);
    k.matmul(w.o, att.data(), n, nullptr, xb.data());
    emit(trace, "o_proj", layer, xb.data(), {{"pos", n}, {"hidden", H}}, batch);
    k.add(x.data(), xb.data(), n * H);
    emit(trace, "attn_residual", layer, x.data(), {{"pos", n}, {"hidden", H}}, batch);

    // MLP block: x += down(silu(gate(x)) * up(x)).
    k.rmsnorm(x.data(), w.post_norm.data(), n, H, eps, xb.data());
    emit(trace, "mlp_norm", layer, xb.data(), {{"pos", n}, {"hidden", H}}, batch);
    // The fast kernels fuse gate and up; the trace gets them from separate matmuls
    // beside the fused path, which stays as an untraced run computes it.
    if (trace != nullptr && (trace->wants("gate", layer) || trace->wants("up", layer))) {
      gate_seen.resize(gate.size());
      up_seen.resize(gate.size());
      k.matmul(w.gate, xb.data(), n, nullptr, gate_seen.data());
      k.matmul(w.up, xb.data(), n, nullptr, up_seen.data());
      emit(trace, "gate", layer, gate_seen.data(), {{"pos", n}, {"intermediate", I}}, batch);
      emit(trace, "up", layer, up_seen.data(), {{"pos", n}, {"intermediate", I}}, batch);
    }
    k.mlp_gate_up(w.gate, w.up, xb.data(), n, gate.data());
    emit(trace, "mlp_act", layer, gate.data(), {{"pos", n}, {"intermediate", I}}, batch);
    k.matmul(w.down, gate.data(), n, nullptr, xb.data());
    emit(trace, "down", layer, xb.data(), {{"pos", n}, {"hidden", H}}, batch);
    k.add(x.data(), xb.data(), n * H);
    emit(trace, "output", layer, x.data(), {{"pos", n}, {"hidden", H}}, batch);
  }
  for (int64_t t = 0; t < n; ++t) cache.mark_written(batch.sequences[t], batch.positions[t]);

  if (trace != nullptr && trace->wants("final_norm", -1)) {
    k.rmsnorm(x.data(), final_norm_.data(), n, H, eps, xb.data());
    emit(trace, "final_norm", -1, xb.data(), {{"pos", n}, {"hidden", H}}, batch);
  }

  // Logits only for the rows that asked: a sequence's last real position.
  const int64_t m = batch.logit_rows();
  if (m == 0) return;
  std::vector<float> picked;
  const float* src = x.data();
  if (m != n) {
    picked.reserve(static_cast<size_t>(m * H));
    for (int64_t t = 0; t < n; ++t)
      if (batch.want_logits[t]) picked.insert(picked.end(), &x[t * H], &x[t * H] + H);
    src = picked.data();
  }
  project_to_vocab(src, m, k, logits);
  if (trace != nullptr && trace->wants("logits", -1)) {
    // The logits rows are a subset of the batch rows; report their positions and tokens.
    Batch rows_batch;
    for (int64_t t = 0; t < n; ++t)
      if (batch.want_logits[t]) rows_batch.add(batch.tokens[t], batch.positions[t], batch.sequences[t], true);
    emit(trace, "logits", -1, logits.data(), {{"pos", m}, {"vocab", c.vocab_size}}, rows_batch);
  }
}

}  // namespace glass
