#include "kernels/reference_kernels.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"

namespace glass {

const char* kv_type_name(KVType t) {
  switch (t) {
    case KVType::F32: return "f32";
    case KVType::F16: return "f16";
    case KVType::BF16: return "bf16";
  }
  return "?";
}

bool parse_kv_type(const char* s, KVType* out) {
  for (KVType t : {KVType::F32, KVType::F16, KVType::BF16}) {
    if (std::strcmp(s, kv_type_name(t)) == 0) {
      *out = t;
      return true;
    }
  }
  return false;
}

size_t kv_type_size(KVType t) { return t == KVType::F32 ? 4 : 2; }

const char* matmul_precision_name(MatmulPrecision p) { return p == MatmulPrecision::Bf16 ? "bf16" : "float"; }

bool parse_matmul_precision(const char* s, MatmulPrecision* out) {
  for (MatmulPrecision p : {MatmulPrecision::Float, MatmulPrecision::Bf16}) {
    if (std::strcmp(s, matmul_precision_name(p)) == 0) {
      *out = p;
      return true;
    }
  }
  return false;
}

void Kernels::mlp_gate_up(const WeightMatrix& gate, const WeightMatrix& up, const float* x, int64_t n, float* out) {
  std::vector<float> u(static_cast<size_t>(n * up.rows));
  matmul(gate, x, n, nullptr, out);
  matmul(up, x, n, nullptr, u.data());
  silu_mul(out, u.data(), n * gate.rows, out);
}

float load_kv(KVType t, const std::byte* row, int64_t i) {
  switch (t) {
    case KVType::F32: {
      float v;
      std::memcpy(&v, row + 4 * i, 4);
      return v;
    }
    case KVType::F16: return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    case KVType::BF16: return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  }
  return 0;
}

void ReferenceKernels::matmul(const WeightMatrix& w, const float* x, int64_t n, const float* bias, float* y) {
  std::vector<float> row(static_cast<size_t>(w.cols)), rounded;
  if (rounds_activations(w.type)) {
    rounded.resize(static_cast<size_t>(n * w.cols));
    for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = bf16_to_f32(f32_to_bf16_flushed(x[i]));
    x = rounded.data();
  }
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w, r, row.data());
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      double acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t c = 0; c < w.cols; ++c) acc += static_cast<double>(row[c]) * xt[c];
      if (bias != nullptr) acc += bias[r];
      y[t * w.rows + r] = static_cast<float>(acc);
    }
  }
}

void ReferenceKernels::rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) {
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xt[i]) * xt[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[t * dim + i] = static_cast<float>(xt[i] * inv * weight[i]);
  }
}

void ReferenceKernels::rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos,
                            const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < n; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double a = v[i], b = v[i + half];
        v[i] = static_cast<float>(a * c[i] - b * s[i]);
        v[i + half] = static_cast<float>(b * c[i] + a * s[i]);
      }
    }
  }
}

void ReferenceKernels::silu_mul(const float* gate, const float* up, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void ReferenceKernels::add(float* x, const float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] += y[i];
}

void ReferenceKernels::attention(const AttentionArgs& a) {
  const int64_t group = a.heads / a.kv_heads;
  const int64_t kv_dim = a.kv_heads * a.head_dim;
  const size_t esz = kv_type_size(a.kv_type);
  std::vector<double> scores;
  for (int64_t t = 0; t < a.n; ++t) {
    const AttentionRow& row = a.rows[t];
    scores.assign(static_cast<size_t>(row.length), 0.0);
    auto slot = [&](const std::byte* base, int64_t pos, int64_t kvh) {
      const int32_t block = row.block_ids[pos / a.block_size];
      return base + static_cast<size_t>(block) * a.block_stride +
             (static_cast<size_t>(pos % a.block_size) * kv_dim + kvh * a.head_dim) * esz;
    };
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t kvh = h / group;
      const float* q = a.q + (t * a.heads + h) * a.head_dim;
      double max_score = -INFINITY;
      for (int64_t p = 0; p < row.length; ++p) {
        const std::byte* k = slot(a.k_base, p, kvh);
        double dot = 0;
        for (int64_t i = 0; i < a.head_dim; ++i) dot += static_cast<double>(q[i]) * load_kv(a.kv_type, k, i);
        scores[p] = dot * a.scale;
        max_score = std::max(max_score, scores[p]);
      }
      if (a.scores_out != nullptr) {
        float* s = a.scores_out + (t * a.heads + h) * a.weights_stride;
        for (int64_t p = 0; p < row.length; ++p) s[p] = static_cast<float>(scores[p]);
        for (int64_t p = row.length; p < a.weights_stride; ++p) s[p] = -INFINITY;
      }
      double sum = 0;
      for (int64_t p = 0; p < row.length; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        sum += scores[p];
      }
      float* out = a.out + (t * a.heads + h) * a.head_dim;
      std::vector<double> acc(static_cast<size_t>(a.head_dim), 0.0);
      for (int64_t p = 0; p < row.length; ++p) {
        const double w = scores[p] / sum;
        const std::byte* v = slot(a.v_base, p, kvh);
        for (int64_t i = 0; i < a.head_dim; ++i) acc[i] += w * load_kv(a.kv_type, v, i);
        if (a.weights_out != nullptr) a.weights_out[(t * a.heads + h) * a.weights_stride + p] = static_cast<float>(w);
      }
      if (a.weights_out != nullptr)
        for (int64_t p = row.length; p < a.weights_stride; ++p)
          a.weights_out[(t * a.heads + h) * a.weights_stride + p] = -1.0f;
      for (int64_t i = 0; i < a.head_dim; ++i) out[i] = static_cast<float>(acc[i]);
    }
  }
}

void store_kv_row(KVType type, const float* src, int64_t count, std::byte* dst) {
  switch (type) {
    case KVType::F32: std::memcpy(dst, src, 4 * static_cast<size_t>(count)); return;
    case KVType::F16: {
      auto* p = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) p[i] = f32_to_f16(src[i]);
      return;
    }
    case KVType::BF16: {
      auto* p = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) p[i] = f32_to_bf16(src[i]);
      return;
    }
  }
}

}  // namespace glass
