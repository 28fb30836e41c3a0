// The operations the decoder forward pass is written in. The reference kernels are the
// oracle: plain loops, double accumulation. Fast kernels implement the same interface
// and are tested against the reference on random inputs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/weight_matrix.h"

namespace glass {

// Element type of the KV cache.
enum class KVType { F32, F16, BF16 };
const char* kv_type_name(KVType t);
bool parse_kv_type(const char* s, KVType* out);
size_t kv_type_size(KVType t);

// What a matmul of bf16 weights multiplies them with. Float: the activations as they are,
// so the forward pass stays within the fixtures' 1e-4 of a float64 one. Bf16: each
// activation rounded to bf16 first (to nearest even, float denormals to zero, as
// vcvtneps2bf16 does: f32_to_bf16_flushed), as llama.cpp does for bf16 weights and
// transformers does in torch_dtype=bfloat16; every product is then exact in fp32, and
// AVX512-BF16's vdpbf16ps takes 32 of them per instruction. Other weight types are
// unaffected (the block types quantize their activations their own way).
enum class MatmulPrecision { Float, Bf16 };
const char* matmul_precision_name(MatmulPrecision p);
bool parse_matmul_precision(const char* s, MatmulPrecision* out);

// The keys and values one query token attends to: `length` positions stored in
// blocks of `block_size` positions. Block b of the sequence lives at
// k_base + block_ids[b] * block_stride (and likewise for v); inside a block, position
// j holds kv_heads * head_dim elements contiguously.
struct AttentionRow {
  const int32_t* block_ids = nullptr;
  int64_t length = 0;
};

struct AttentionArgs {
  const float* q = nullptr;  // [n, heads, head_dim], already rotated
  float* out = nullptr;      // [n, heads, head_dim]
  int64_t n = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;  // 1 / sqrt(head_dim)
  KVType kv_type = KVType::F32;
  const std::byte* k_base = nullptr;
  const std::byte* v_base = nullptr;
  size_t block_stride = 0;  // bytes between consecutive blocks
  int64_t block_size = 0;
  const AttentionRow* rows = nullptr;  // [n]
  // Optional, for the trace: softmax weights, [n, heads, max_length] with -1 padding
  // beyond each row's length. nullptr when nobody asked.
  float* weights_out = nullptr;
  // Optional, for the trace: the scaled scores q·k / sqrt(head_dim) before the softmax,
  // same layout, -inf (the causal mask) beyond each row's length.
  float* scores_out = nullptr;
  int64_t weights_stride = 0;  // max_length, for weights_out and scores_out
};

// One output of a matmul that shares its input with others (q, k and v of a layer).
struct MatmulOutput {
  const WeightMatrix* w;
  const float* bias;  // may be null
  float* y;           // [n, w->rows]
};

class Kernels {
 public:
  explicit Kernels(MatmulPrecision precision = MatmulPrecision::Float) : precision_(precision) {}
  virtual ~Kernels() = default;
  virtual const char* name() const = 0;
  MatmulPrecision matmul_precision() const { return precision_; }
  // Whether a matmul of weights of type t rounds its activations to bf16.
  bool rounds_activations(WeightType t) const {
    return precision_ == MatmulPrecision::Bf16 && t == WeightType::BF16;
  }

  // y[n, w.rows] = x[n, w.cols] · wᵀ (+ bias[w.rows] when bias is non-null).
  virtual void matmul(const WeightMatrix& w, const float* x, int64_t n, const float* bias, float* y) = 0;

  // Several matmuls over the same x (all weights have the same cols); lets a fast
  // implementation prepare x once and run them in one parallel region.
  virtual void matmul_multi(const MatmulOutput* outputs, size_t count, const float* x, int64_t n) {
    for (size_t i = 0; i < count; ++i) matmul(*outputs[i].w, x, n, outputs[i].bias, outputs[i].y);
  }

  // out[n, gate.rows] = silu(x · gateᵀ) * (x · upᵀ): the SwiGLU MLP's first half.
  virtual void mlp_gate_up(const WeightMatrix& gate, const WeightMatrix& up, const float* x, int64_t n, float* out);

  // y[i] = x[i] / sqrt(mean(x[i]²) + eps) * weight, for each of n rows of dim values.
  virtual void rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) = 0;

  // Rotate-half RoPE in place on x[n, heads, head_dim]: for i < head_dim/2 the pair
  // (x[i], x[i + head_dim/2]) turns by the angle whose cos/sin are cos[t, i], sin[t, i].
  virtual void rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) = 0;

  // out[i] = silu(gate[i]) * up[i]; out may alias gate.
  virtual void silu_mul(const float* gate, const float* up, int64_t count, float* out) = 0;

  // x[i] += y[i].
  virtual void add(float* x, const float* y, int64_t count) = 0;

  // Causal grouped-query attention over the KV cache; query head h reads KV head
  // h / (heads / kv_heads).
  virtual void attention(const AttentionArgs& args) = 0;

 private:
  MatmulPrecision precision_;
};

}  // namespace glass
