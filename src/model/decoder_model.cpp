#include "model/decoder_model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "kernels/cpu_kernels.h"
#include "kernels/reference_kernels.h"
#include "kernels/weight_matrix.h"
#include "model/forward_trace.h"

namespace glass {

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The alignment a type's data needs to be read in place. Float rows: a cache line, so
// that the kernels' vector loads never split lines. A safetensors header is padded to 8
// bytes, so most checkpoints leave their tensors off lines, and bf16 rows 32 bytes past a
// line decoded 7% and prefilled 4.5% slower on the AVX-512 machine than the same rows on
// one; those tensors are read into memory of their own instead. The block types: their
// 16-bit scales (rows of 18- or 34-byte blocks never sit on lines anyway).
constexpr size_t kCacheLine = 64;
size_t data_alignment(WeightType t) {
  const bool float_rows = t == WeightType::F32 || t == WeightType::F16 || t == WeightType::BF16;
  return float_rows ? kCacheLine : 2;
}

// Tensors a checkpoint may carry that no forward pass reads: rotary tables some
// exporters saved as buffers.
bool ignorable_tensor(const std::string& name) { return name.ends_with(".rotary_emb.inv_freq"); }

}  // namespace

// Buffers of one forward pass, sized for its n rows.
struct DecoderModel::Activations {
  int64_t n = 0;
  std::vector<float> x, xb, q, k, v, att, hidden;
  std::vector<float> cos, sin;
  std::vector<AttentionRow> rows;
  int64_t max_length = 0;
  // Mixture of experts: router outputs, each row's chosen experts (in descending
  // probability) and their weights, and the experts' outputs per (row, choice).
  std::vector<float> router_probs, expert_weights;
  std::vector<int32_t> chosen;
  std::vector<float> chosen_weight;
  std::vector<float> expert_x, expert_hidden, expert_y, choice_out;
  std::vector<int64_t> expert_rows;  // the choices (row * top_k + rank) routed to one expert
};

DecoderModel DecoderModel::load(const std::string& dir, const LoadOptions& options) {
  return DecoderModel(std::make_shared<const Checkpoint>(dir), options);
}

const CheckpointTensor& DecoderModel::checked(const std::string& name, const std::vector<int64_t>& shape) {
  const CheckpointTensor& t = checkpoint_->get(name);
  if (t.shape != shape)
    fail(t.file, ": tensor \"", name, "\" has shape ", t.shape_string(), " but ", checkpoint_->config_path(),
         " implies ", shape_str(shape));
  if (!t.type)
    fail(t.file, ": tensor \"", name, "\" has dtype ", t.dtype, "; supported weight dtypes are BF16, F16 and F32");
  if (traits(*t.type).dequantize == nullptr)
    refuse(t.file, ": tensor \"", name, "\" is ", t.dtype, ", which glass cannot decode yet");
  used_.push_back(name);
  // Stacked experts check one tensor once per expert, one after the other.
  if (&t != last_checked_) loaded_bytes_ += t.nbytes;
  last_checked_ = &t;
  return t;
}

WeightMatrix DecoderModel::matrix(const char* pattern, int64_t layer, int64_t expert, int64_t rows, int64_t cols,
                                  std::optional<WeightType> target_type) {
  const std::string name = tensor_name(pattern, layer, expert);
  WeightMatrix w;
  w.rows = rows;
  w.cols = cols;
  const CheckpointTensor* tensor;
  if (expert >= 0 && stacked_experts(pattern)) {  // expert `expert` of a [experts, rows, cols] tensor
    tensor = &checked(name, {config().num_experts, rows, cols});
    w.type = *tensor->type;
    w.row_bytes = weight_row_bytes(w.type, cols);
    w.data = tensor->data + static_cast<size_t>(expert * rows) * w.row_bytes;
  } else {
    tensor = &checked(name, {rows, cols});
    w.type = *tensor->type;
    w.row_bytes = weight_row_bytes(w.type, cols);
    w.data = tensor->data;
  }
  const CheckpointTensor& t = *tensor;
  if (!row_fits(w.type, cols))
    fail(t.file, ": tensor \"", name, "\" has rows of ", cols, " values, not a whole number of ", t.dtype, " blocks");
  const bool aligned = reinterpret_cast<uintptr_t>(w.data) % data_alignment(w.type) == 0;
  const WeightType target = target_type.value_or(w.type);
  // Used in place from the map, as stored, unless the CPU kernels want their own layout: bf16
  // with AMX in tiles, q4_1 / q5_0 / q5_1 and the k-quants in lanes (weight_matrix.h). A file's own q8_0 / q4_0
  // rows always run row-major, in llama.cpp's order of block sums (CpuFeatures::amx_int8).
  const bool relay = (cpu_layout_tiles(w) && !interleavable(w.type)) || (lane_blockable(w.type) && cpu_layout_differs(w));
  if (target == w.type && aligned && !relay) {
    in_place_.emplace_back(w.data, w.bytes());
    return w;
  }

  if (!row_fits(target, cols))
    fail(t.file, ": tensor \"", name, "\" has rows of ", cols, " values; ", weight_type_name(target),
         " needs a multiple of ", traits(target).block_values);
  // Realign (the header length was odd), or convert row by row, reading the rows from the
  // file rather than the map (Checkpoint::read): a load holds the weights it computes with
  // and a few MiB of the source, and pays no page fault per 4 KiB of a file it reads once.
  if (target == w.type) {
    if (!aligned) {  // into memory of its own, on a line
      std::unique_ptr<std::byte[]> copy;
      std::byte* at = aligned_bytes(copy, w.bytes());
      if (!checkpoint_->read(w.data, w.bytes(), at)) std::memcpy(at, w.data, w.bytes());
      WeightMatrix realigned = w;
      realigned.data = at;
      if (relay) realigned = cpu_layout(realigned, copy);
      owned_.push_back(std::move(copy));
      return realigned;
    }
    // In place but for the CPU layout.
    std::unique_ptr<std::byte[]> tiles;
    const WeightMatrix tiled = cpu_layout(w, tiles);
    owned_.push_back(std::move(tiles));
    if (tiled.data != w.data) checkpoint_->release_pages(w.data, w.bytes());
    return tiled;
  }
  WeightMatrix dst = w;
  dst.type = target;
  dst.row_bytes = weight_row_bytes(target, cols);
  // Interleaved for the CPU kernels: converted straight into that layout, a group of rows
  // at a time. Tiles: converted into a scratch buffer the whole load reuses (fresh pages
  // cost the kernel a zeroing each), then laid out.
  const size_t converted_bytes = dst.row_bytes * static_cast<size_t>(rows);
  const bool relaid = cpu_layout_differs(dst);
  const bool interleave = relaid && !cpu_layout_tiles(dst) && interleavable(target) && rows >= kInterleaveRows;
  std::unique_ptr<std::byte[]> buffer;
  std::byte* converted;
  if (relaid && !interleave) {  // a scratch the load reuses, not kept: no layout of its own
    if (scratch_bytes_ < converted_bytes) {
      scratch_.reset();
      scratch_.reset(new std::byte[converted_bytes]);
      scratch_bytes_ = converted_bytes;
    }
    converted = scratch_.get();
  } else {
    converted = aligned_bytes(buffer, converted_bytes);
  }
  WeightMatrix laid = dst;  // the interleaved result
  laid.data = converted;
  laid.interleaved = interleave;
  const int64_t grouped = interleave ? laid.interleaved_rows() : 0;  // rows in whole groups
  // Rows convert independently; a few threads make q8_0 / q4_0 loading about as many
  // times faster. Each takes whole groups and reads its rows a chunk of about 4 MiB at a time.
  const int64_t groups = rows / kInterleaveRows;
  const int64_t workers = conversion_threads(groups);
  const int64_t chunk_rows = std::max<int64_t>(1, int64_t{4 << 20} / static_cast<int64_t>(w.row_bytes) / kInterleaveRows) *
                             kInterleaveRows;
  std::atomic<bool> mapped_reads{false};
  auto convert = [&](int64_t begin, int64_t end) {
    std::vector<float> values(static_cast<size_t>(cols));
    std::vector<std::byte> group_rows(interleave ? static_cast<size_t>(kInterleaveRows) * dst.row_bytes : 0);
    std::unique_ptr<std::byte[]> chunk(new std::byte[static_cast<size_t>(std::min(chunk_rows, end - begin)) * w.row_bytes]);
    for (int64_t r0 = begin; r0 < end; r0 += chunk_rows) {
      const int64_t n = std::min(chunk_rows, end - r0);
      WeightMatrix part = w;
      part.rows = n;
      part.data = w.data + static_cast<size_t>(r0) * w.row_bytes;
      if (checkpoint_->read(part.data, static_cast<size_t>(n) * w.row_bytes, chunk.get())) {
        part.data = chunk.get();
      } else {
        mapped_reads = true;  // read through the map (not a weight file's bytes, or the read failed)
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = r0 + i;
        dequantize_row(part, i, values.data());
        if (r < grouped) {
          quantize_row(target, values.data(), cols, group_rows.data() + static_cast<size_t>(r % kInterleaveRows) * dst.row_bytes);
          if (r % kInterleaveRows == kInterleaveRows - 1) interleave_group(laid, r / kInterleaveRows, group_rows.data());
        } else {  // row-major: the matrix, or the rows after the last whole group
          quantize_row(target, values.data(), cols, converted + static_cast<size_t>(r) * dst.row_bytes);
        }
      }
    }
  };
  {
    // Worker i: groups [groups * i / workers, groups * (i + 1) / workers), the last also the rest.
    const auto bound = [&](int64_t i) { return i == workers ? rows : groups * i / workers * kInterleaveRows; };
    std::vector<std::jthread> threads;
    for (int64_t i = 1; i < workers; ++i) threads.emplace_back(convert, bound(i), bound(i + 1));
    convert(0, bound(1));
  }
  if (mapped_reads) checkpoint_->release_pages(w.data, w.bytes());
  if (interleave) dst = laid;
  else dst.data = converted;
  if (relaid && !interleave) dst = cpu_layout(dst, buffer);  // AMX tiles, or lanes
  owned_.push_back(std::move(buffer));
  return dst;
}

std::vector<float> DecoderModel::vector(const char* pattern, int64_t layer, int64_t size) {
  const std::string name = tensor_name(pattern, layer);
  const CheckpointTensor& t = checked(name, {size});
  if (!row_fits(*t.type, size))
    fail(t.file, ": tensor \"", name, "\" holds ", size, " values, not a whole number of ", t.dtype, " blocks");
  std::vector<float> out(static_cast<size_t>(size));
  dequantize_values(*t.type, t.data, out.data(), size);
  return out;
}

void DecoderModel::refuse_unused_tensors() const {
  const std::set<std::string> used(used_.begin(), used_.end());
  const ModelConfig& c = config();
  for (const CheckpointTensor* t : checkpoint_->tensors()) {
    if (used.count(t->name) || ignorable_tensor(t->name)) continue;
    // A tied checkpoint may still carry the output matrix; transformers ties over it.
    if (c.tie_word_embeddings && t->name == names_.output) continue;
    fail(t->file, ": tensor \"", t->name, "\" is not part of a ", architecture_class_name(c.architecture),
         " with this config (", checkpoint_->config_path(),
         "); the config and the weights describe different models (e.g. q_norm/k_norm belong to Qwen3, "
         "q/k/v biases to Qwen2 or attention_bias, experts to Qwen3-MoE)");
  }
}

DecoderModel::DecoderModel(std::shared_ptr<const Checkpoint> checkpoint, const LoadOptions& options)
    : checkpoint_(std::move(checkpoint)),
      names_(checkpoint_->format() == CheckpointFormat::kGguf ? kGgufTensorNames : kHuggingFaceTensorNames),
      rope_(RopeTable::from_config(config())) {
  const ModelConfig& c = checkpoint_->config();
  const TensorNames& n = names_;
  const int64_t h = c.hidden_size;
  const auto wt = options.weight_type;
  size_t total_bytes = 0;
  for (const CheckpointTensor* t : checkpoint_->tensors()) total_bytes += t->nbytes;
  auto report = [&] {
    if (options.progress) options.progress(std::min(loaded_bytes_, total_bytes), total_bytes);
  };
  embed_ = matrix(n.token_embedding, -1, -1, c.vocab_size, h, wt);
  report();
  lm_head_ = c.tie_word_embeddings ? embed_ : matrix(n.output, -1, -1, c.vocab_size, h, wt);
  // The layers' matrices are far smaller than the vocabulary's: a scratch of their size.
  scratch_.reset();
  scratch_bytes_ = 0;
  final_norm_ = vector(n.output_norm, -1, h);
  layers_.resize(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    Layer& L = layers_[l];
    L.attn_norm = vector(n.attn_norm, l, h);
    L.ffn_norm = vector(n.ffn_norm, l, h);
    L.q = matrix(n.attn_q, l, -1, c.q_dim(), h, wt);
    L.k = matrix(n.attn_k, l, -1, c.kv_dim(), h, wt);
    L.v = matrix(n.attn_v, l, -1, c.kv_dim(), h, wt);
    L.o = matrix(n.attn_o, l, -1, h, c.q_dim(), wt);
    if (c.attention_bias) {
      L.q_bias = vector(n.attn_q_bias, l, c.q_dim());
      L.k_bias = vector(n.attn_k_bias, l, c.kv_dim());
      L.v_bias = vector(n.attn_v_bias, l, c.kv_dim());
    }
    if (c.qk_norm) {
      L.q_norm = vector(n.attn_q_norm, l, c.head_dim);
      L.k_norm = vector(n.attn_k_norm, l, c.head_dim);
    }
    if (c.is_sparse_layer(l)) {
      L.router = matrix(n.ffn_router, l, -1, c.num_experts, h, std::nullopt);
      L.experts.resize(static_cast<size_t>(c.num_experts));
      for (int64_t e = 0; e < c.num_experts; ++e) {
        Expert& E = L.experts[e];
        E.gate = matrix(n.expert_gate, l, e, c.moe_intermediate_size, h, wt);
        E.up = matrix(n.expert_up, l, e, c.moe_intermediate_size, h, wt);
        E.down = matrix(n.expert_down, l, e, h, c.moe_intermediate_size, wt);
      }
    } else {
      L.gate = matrix(n.ffn_gate, l, -1, c.intermediate_size, h, wt);
      L.up = matrix(n.ffn_up, l, -1, c.intermediate_size, h, wt);
      L.down = matrix(n.ffn_down, l, -1, h, c.intermediate_size, wt);
    }
    report();
  }
  refuse_unused_tensors();
  // What the model reads in place stays mapped; the rest of the files (converted sources,
  // the header, norms read into floats, pages the kernel mapped around those) leaves.
  checkpoint_->release_pages_except(in_place_);
  if (options.progress) options.progress(total_bytes, total_bytes);
  used_.clear();
  used_.shrink_to_fit();
  in_place_.clear();
  in_place_.shrink_to_fit();
  scratch_.reset();
  scratch_bytes_ = 0;
}

const WeightMatrix& DecoderModel::representative_matrix() const {
  if (layers_.empty()) return embed_;
  const Layer& L = layers_[0];
  return L.sparse() ? L.experts[0].gate : L.gate;
}

WeightType DecoderModel::weight_type() const { return representative_matrix().type; }

size_t DecoderModel::matrix_bytes() const {
  size_t n = embed_.bytes();
  if (lm_head_.data != embed_.data) n += lm_head_.bytes();
  for (const Layer& L : layers_) {
    for (const WeightMatrix* w : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down, &L.router}) n += w->bytes();
    for (const Expert& e : L.experts) n += e.gate.bytes() + e.up.bytes() + e.down.bytes();
  }
  return n;
}

size_t DecoderModel::decode_weight_bytes() const {
  const auto routed = static_cast<size_t>(config().num_experts_per_tok);
  size_t n = lm_head_.bytes();
  for (const Layer& L : layers_) {
    for (const WeightMatrix* w : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down, &L.router}) n += w->bytes();
    if (L.sparse()) {
      const Expert& e = L.experts[0];  // every expert has the same shape and type
      n += routed * (e.gate.bytes() + e.up.bytes() + e.down.bytes());
    }
  }
  return n;
}

void DecoderModel::project_to_vocab(const float* x, int64_t n, Kernels& k, std::vector<float>& logits) const {
  const ModelConfig& c = config();
  std::vector<float> normed(static_cast<size_t>(n * c.hidden_size));
  k.rmsnorm(x, final_norm_.data(), n, c.hidden_size, static_cast<float>(c.rms_norm_eps), normed.data());
  logits.resize(static_cast<size_t>(n * c.vocab_size));
  k.matmul(lm_head_, normed.data(), n, nullptr, logits.data());
}

// x += o_proj(attention(rope(norm(q)), rope(norm(k)), v)), with q, k, v projected from
// the input-normed x (+ bias) and K/V written into the cache.
void DecoderModel::attention_block(const Layer& w, int layer, const Batch& batch, KVCache& cache, Kernels& k,
                                   Activations& a, ForwardTrace& trace) const {
  const ModelConfig& c = config();
  const int64_t n = a.n, H = c.hidden_size, nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim;
  const auto eps = static_cast<float>(c.rms_norm_eps);
  auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };

  k.rmsnorm(a.x.data(), w.attn_norm.data(), n, H, eps, a.xb.data());
  trace.emit(Stage::kAttnNorm, layer, a.xb.data(), {n, H});
  const MatmulOutput qkv[3] = {{&w.q, bias(w.q_bias), a.q.data()},
                               {&w.k, bias(w.k_bias), a.k.data()},
                               {&w.v, bias(w.v_bias), a.v.data()}};
  k.matmul_multi(qkv, 3, a.xb.data(), n);
  trace.emit(Stage::kQ, layer, a.q.data(), {n, nh, hd});
  trace.emit(Stage::kK, layer, a.k.data(), {n, nkv, hd});
  trace.emit(Stage::kV, layer, a.v.data(), {n, nkv, hd});
  if (!w.q_norm.empty()) {  // Qwen3: each head's q and k RMS-normalised before RoPE
    k.rmsnorm(a.q.data(), w.q_norm.data(), n * nh, hd, eps, a.q.data());
    k.rmsnorm(a.k.data(), w.k_norm.data(), n * nkv, hd, eps, a.k.data());
    trace.emit(Stage::kQNorm, layer, a.q.data(), {n, nh, hd});
    trace.emit(Stage::kKNorm, layer, a.k.data(), {n, nkv, hd});
  }
  k.rope(a.q.data(), n, nh, hd, a.cos.data(), a.sin.data());
  k.rope(a.k.data(), n, nkv, hd, a.cos.data(), a.sin.data());
  trace.emit(Stage::kQRope, layer, a.q.data(), {n, nh, hd});
  trace.emit(Stage::kKRope, layer, a.k.data(), {n, nkv, hd});
  for (int64_t t = 0; t < n; ++t) {
    const int32_t s = batch.sequences[t], p = batch.positions[t];
    store_kv_row(cache.type(), &a.k[t * nkv * hd], nkv * hd, cache.write_slot(layer, 0, s, p));
    store_kv_row(cache.type(), &a.v[t * nkv * hd], nkv * hd, cache.write_slot(layer, 1, s, p));
  }
  AttentionArgs args;
  args.q = a.q.data();
  args.out = a.att.data();
  args.n = n;
  args.heads = nh;
  args.kv_heads = nkv;
  args.head_dim = hd;
  args.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  args.kv_type = cache.type();
  args.k_base = cache.layer_base(layer, 0);
  args.v_base = cache.layer_base(layer, 1);
  args.block_stride = cache.block_stride();
  args.block_size = cache.block_size();
  args.rows = a.rows.data();
  k.attention(args);
  trace.replay_attention(layer, args, a.max_length, k);
  trace.emit(Stage::kAttnOut, layer, a.att.data(), {n, nh, hd});
  k.matmul(w.o, a.att.data(), n, nullptr, a.xb.data());
  trace.emit(Stage::kOProj, layer, a.xb.data(), {n, H});
  k.add(a.x.data(), a.xb.data(), n * H);
  trace.emit(Stage::kAttnResidual, layer, a.x.data(), {n, H});
}

// xb = down(silu(gate(xb)) * up(xb)).
void DecoderModel::dense_mlp(const Layer& w, int layer, int64_t n, Kernels& k, Activations& a,
                             ForwardTrace& trace) const {
  const int64_t H = config().hidden_size, I = w.gate.rows;
  trace.replay_gate_up(layer, w.gate, w.up, a.xb.data(), n, k);
  k.mlp_gate_up(w.gate, w.up, a.xb.data(), n, a.hidden.data());
  trace.emit(Stage::kMlpAct, layer, a.hidden.data(), {n, I});
  k.matmul(w.down, a.hidden.data(), n, nullptr, a.xb.data());
  trace.emit(Stage::kDown, layer, a.xb.data(), {n, H});
}

// xb = sum over the row's top-k experts e of weight_e * down_e(silu(gate_e(xb)) * up_e(xb))
// (transformers' Qwen3MoeSparseMoeBlock). The rows routed to one expert run as one
// matmul, so a batch reads each expert once; every row's sum runs over its own choices
// in rank order, so its result does not depend on what else is in the batch.
void DecoderModel::moe_mlp(const Layer& w, int layer, int64_t n, Kernels& k, Activations& a,
                           ForwardTrace& trace) const {
  const ModelConfig& c = config();
  const int64_t H = c.hidden_size, E = c.num_experts, K = c.num_experts_per_tok, I = c.moe_intermediate_size;

  // Router: softmax over all experts (in double; transformers uses float32), top-k, and
  // renormalisation of the chosen weights when norm_topk_prob.
  a.router_probs.resize(static_cast<size_t>(n * E));
  k.matmul(w.router, a.xb.data(), n, nullptr, a.router_probs.data());
  a.chosen.resize(static_cast<size_t>(n * K));
  a.chosen_weight.resize(static_cast<size_t>(n * K));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < n; ++t) {
    float* p = &a.router_probs[t * E];
    const float top = *std::max_element(p, p + E);
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += std::exp(static_cast<double>(p[e]) - top);
    for (int64_t e = 0; e < E; ++e) p[e] = static_cast<float>(std::exp(static_cast<double>(p[e]) - top) / sum);
    std::iota(order.begin(), order.end(), 0);
    // Descending probability; equal probabilities keep the lower expert first.
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [p](int32_t x, int32_t y) { return p[x] > p[y] || (p[x] == p[y] && x < y); });
    double chosen_sum = 0;
    for (int64_t r = 0; r < K; ++r) chosen_sum += p[order[r]];
    for (int64_t r = 0; r < K; ++r) {
      a.chosen[t * K + r] = order[r];
      a.chosen_weight[t * K + r] =
          static_cast<float>(c.norm_topk_prob ? p[order[r]] / chosen_sum : static_cast<double>(p[order[r]]));
    }
  }
  trace.emit(Stage::kRouterProbs, layer, a.router_probs.data(), {n, E});
  if (trace.wants(Stage::kExpertWeights, layer)) {
    a.expert_weights.assign(static_cast<size_t>(n * E), 0.0f);
    for (int64_t i = 0; i < n * K; ++i) a.expert_weights[(i / K) * E + a.chosen[i]] = a.chosen_weight[i];
    trace.emit(Stage::kExpertWeights, layer, a.expert_weights.data(), {n, E});
  }

  // Each expert over the rows that chose it; outputs land at (row, rank).
  a.choice_out.resize(static_cast<size_t>(n * K * H));
  for (int64_t e = 0; e < E; ++e) {
    a.expert_rows.clear();
    for (int64_t i = 0; i < n * K; ++i)
      if (a.chosen[i] == e) a.expert_rows.push_back(i);
    const auto m = static_cast<int64_t>(a.expert_rows.size());
    if (m == 0) continue;
    a.expert_x.resize(static_cast<size_t>(m * H));
    a.expert_hidden.resize(static_cast<size_t>(m * I));
    a.expert_y.resize(static_cast<size_t>(m * H));
    for (int64_t j = 0; j < m; ++j)
      std::memcpy(&a.expert_x[j * H], &a.xb[(a.expert_rows[j] / K) * H], static_cast<size_t>(H) * sizeof(float));
    const Expert& ex = w.experts[e];
    k.mlp_gate_up(ex.gate, ex.up, a.expert_x.data(), m, a.expert_hidden.data());
    k.matmul(ex.down, a.expert_hidden.data(), m, nullptr, a.expert_y.data());
    for (int64_t j = 0; j < m; ++j)
      std::memcpy(&a.choice_out[a.expert_rows[j] * H], &a.expert_y[j * H], static_cast<size_t>(H) * sizeof(float));
  }
  for (int64_t t = 0; t < n; ++t) {
    float* out = &a.xb[t * H];
    std::fill(out, out + H, 0.0f);
    for (int64_t r = 0; r < K; ++r) {
      const float weight = a.chosen_weight[t * K + r];
      const float* y = &a.choice_out[(t * K + r) * H];
      for (int64_t i = 0; i < H; ++i) out[i] += weight * y[i];
    }
  }
  trace.emit(Stage::kMoeOut, layer, a.xb.data(), {n, H});
}

void DecoderModel::forward(const Batch& batch, KVCache& cache, Kernels& k, std::vector<float>& logits,
                           TraceSink* sink) const {
  const ModelConfig& c = config();
  const int64_t n = batch.size();
  const int64_t H = c.hidden_size;
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

  ForwardTrace trace(sink, batch);
  Activations a;
  a.n = n;
  a.x.resize(n * H);
  a.xb.resize(n * H);
  a.q.resize(n * c.q_dim());
  a.k.resize(n * c.kv_dim());
  a.v.resize(n * c.kv_dim());
  a.att.resize(n * c.q_dim());
  if (c.sparse_layer_count() < c.num_layers) a.hidden.resize(n * c.intermediate_size);  // dense layers only

  for (int64_t t = 0; t < n; ++t) dequantize_row(embed_, batch.tokens[t], &a.x[t * H]);
  trace.emit(Stage::kEmbed, -1, a.x.data(), {n, H});

  const int64_t half = c.head_dim / 2;
  a.cos.resize(n * half);
  a.sin.resize(n * half);
  rope_.angles(batch.positions.data(), n, a.cos.data(), a.sin.data());

  // Each row attends to positions 0..pos of its own sequence.
  a.rows.resize(n);
  for (int64_t t = 0; t < n; ++t) {
    a.rows[t].block_ids = cache.block_table(batch.sequences[t]).data();
    a.rows[t].length = batch.positions[t] + 1;
    a.max_length = std::max(a.max_length, a.rows[t].length);
  }

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const Layer& w = layers_[l];
    const int layer = static_cast<int>(l);
    attention_block(w, layer, batch, cache, k, a, trace);
    k.rmsnorm(a.x.data(), w.ffn_norm.data(), n, H, eps, a.xb.data());
    trace.emit(Stage::kMlpNorm, layer, a.xb.data(), {n, H});
    if (w.sparse()) moe_mlp(w, layer, n, k, a, trace);
    else dense_mlp(w, layer, n, k, a, trace);
    k.add(a.x.data(), a.xb.data(), n * H);
    trace.emit(Stage::kOutput, layer, a.x.data(), {n, H});
  }
  for (int64_t t = 0; t < n; ++t) cache.mark_written(batch.sequences[t], batch.positions[t]);

  if (trace.wants(Stage::kFinalNorm, -1)) {
    k.rmsnorm(a.x.data(), final_norm_.data(), n, H, eps, a.xb.data());
    trace.emit(Stage::kFinalNorm, -1, a.xb.data(), {n, H});
  }

  // Logits only for the rows that asked: a sequence's last real position.
  const int64_t m = batch.logit_rows();
  if (m == 0) return;
  std::vector<float> picked;
  const float* src = a.x.data();
  if (m != n) {
    picked.reserve(static_cast<size_t>(m * H));
    for (int64_t t = 0; t < n; ++t)
      if (batch.want_logits[t]) picked.insert(picked.end(), &a.x[t * H], &a.x[t * H] + H);
    src = picked.data();
  }
  project_to_vocab(src, m, k, logits);
  if (trace.wants(Stage::kLogits, -1)) {
    // The logits rows are a subset of the batch rows; report their positions and tokens.
    Batch rows_batch;
    for (int64_t t = 0; t < n; ++t)
      if (batch.want_logits[t]) rows_batch.add(batch.tokens[t], batch.positions[t], batch.sequences[t], true);
    trace.emit(Stage::kLogits, -1, logits.data(), {m, c.vocab_size}, &rows_batch);
  }
}

}  // namespace glass
