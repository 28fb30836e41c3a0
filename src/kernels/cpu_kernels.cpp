#include "kernels/cpu_kernels.h"

#include <algorithm>

#include "kernels/reference_kernels.h"
#include "kernels/simd_kernels.h"

namespace glass {

namespace {
// Rows per thread-range boundary: a multiple of every tile height.
constexpr int64_t kRowGrain = 8;
}  // namespace

CpuFeatures CpuFeatures::detect() { return {simd::cpu_has_avx512_vnni()}; }

const char* CpuKernels::simd_target() { return simd::target_name(); }

std::string CpuKernels::simd_path() const {
  std::string s = simd_target();
  if (features_.avx512_vnni && s.rfind("AVX3", 0) == 0) s += " + VNNI";
  return s;
}

const std::byte* CpuKernels::prepare(WeightType type, const float* x, int64_t n, int64_t cols,
                                     std::vector<std::byte>& buffer) {
  // The float kernels read x as it is, but for bf16's reordering (simd::prepare_rows).
  if (type != WeightType::BF16 && traits(type).activation == ActivationFormat::Float)
    return reinterpret_cast<const std::byte*>(x);
  const size_t row = simd::prepared_row_bytes(type, cols);
  if (buffer.size() < row * static_cast<size_t>(n)) buffer.resize(row * static_cast<size_t>(n));
  std::byte* out = buffer.data();
  if (n == 1) {
    simd::prepare_rows(type, x, 1, cols, out);
  } else {
    pool_.parallel_for(n, 1, [&](int64_t b, int64_t e) {
      simd::prepare_rows(type, x + b * cols, e - b, cols, out + static_cast<size_t>(b) * row);
    });
  }
  return out;
}

void CpuKernels::matmul_rows(const WeightMatrix& w, const std::byte* xp, int64_t n, int64_t row_begin, int64_t row_end,
                             const float* bias, float* y) const {
  simd::matmul_rows(w, xp, n, row_begin, row_end, bias, y, features_.avx512_vnni);
}

void CpuKernels::matmul(const WeightMatrix& w, const float* x, int64_t n, const float* bias, float* y) {
  const std::byte* xp = prepare(w.type, x, n, w.cols, prepared_);
  pool_.parallel_for(w.rows, kRowGrain, [&](int64_t b, int64_t e) { matmul_rows(w, xp, n, b, e, bias, y); });
}

void CpuKernels::matmul_multi(const MatmulOutput* outputs, size_t count, const float* x, int64_t n) {
  bool same_type = true;
  int64_t total_rows = 0;
  for (size_t i = 0; i < count; ++i) {
    same_type = same_type && outputs[i].w->type == outputs[0].w->type && outputs[i].w->cols == outputs[0].w->cols;
    total_rows += outputs[i].w->rows;
  }
  if (!same_type || count == 0) {
    Kernels::matmul_multi(outputs, count, x, n);
    return;
  }
  const std::byte* xp = prepare(outputs[0].w->type, x, n, outputs[0].w->cols, prepared_);
  // One range over the concatenated rows of all outputs.
  pool_.parallel_for(total_rows, kRowGrain, [&](int64_t b, int64_t e) {
    int64_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      const int64_t rows = outputs[i].w->rows;
      const int64_t lo = std::max(b, offset), hi = std::min(e, offset + rows);
      if (lo < hi) matmul_rows(*outputs[i].w, xp, n, lo - offset, hi - offset, outputs[i].bias, outputs[i].y);
      offset += rows;
    }
  });
}

void CpuKernels::mlp_gate_up(const WeightMatrix& gate, const WeightMatrix& up, const float* x, int64_t n, float* out) {
  const std::byte* gp = prepare(gate.type, x, n, gate.cols, prepared_);
  const std::byte* upp = up.type == gate.type ? gp : prepare(up.type, x, n, up.cols, prepared_up_);
  const auto count = static_cast<size_t>(n * up.rows);
  if (up_scratch_.size() < count) up_scratch_.resize(count);
  float* u = up_scratch_.data();
  const int64_t rows = gate.rows;
  pool_.parallel_for(rows, kRowGrain, [&](int64_t b, int64_t e) {
    matmul_rows(gate, gp, n, b, e, nullptr, out);
    matmul_rows(up, upp, n, b, e, nullptr, u);
    for (int64_t t = 0; t < n; ++t) simd::silu_mul(out + t * rows + b, u + t * rows + b, e - b, out + t * rows + b);
  });
}

void CpuKernels::rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) {
  if (n < 16) {
    simd::rmsnorm(x, weight, n, dim, eps, y);
    return;
  }
  pool_.parallel_for(n, 1, [&](int64_t b, int64_t e) { simd::rmsnorm(x + b * dim, weight, e - b, dim, eps, y + b * dim); });
}

void CpuKernels::rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  if (n < 16) {
    simd::rope(x, n, heads, head_dim, cos, sin);
    return;
  }
  pool_.parallel_for(n, 1, [&](int64_t b, int64_t e) {
    simd::rope(x + b * heads * head_dim, e - b, heads, head_dim, cos + b * half, sin + b * half);
  });
}

void CpuKernels::silu_mul(const float* gate, const float* up, int64_t count, float* out) {
  simd::silu_mul(gate, up, count, out);
}

void CpuKernels::add(float* x, const float* y, int64_t count) { simd::add(x, y, count); }

void CpuKernels::attention(const AttentionArgs& args) {
  if (args.weights_out != nullptr || args.scores_out != nullptr) {  // the trace wants them: the reference keeps them
    ReferenceKernels().attention(args);
    return;
  }
  // A task takes a KV head's whole group of query heads (each K/V row is read once for
  // all of them), unless that leaves threads idle, as decoding one sequence does.
  const int64_t group = args.heads / args.kv_heads, pairs = args.n * args.kv_heads;
  const int64_t chunks = std::clamp<int64_t>((pool_.size() + pairs - 1) / pairs, 1, group);
  const int64_t heads_per_task = (group + chunks - 1) / chunks;
  const int64_t tasks = pairs * ((group + heads_per_task - 1) / heads_per_task);
  const int threads = static_cast<int>(std::min<int64_t>(pool_.size(), tasks));
  const int64_t per_thread = simd::attention_scratch_floats(args, heads_per_task);
  if (attention_scratch_.size() < static_cast<size_t>(per_thread * threads))
    attention_scratch_.resize(static_cast<size_t>(per_thread * threads));
  float* scratch = attention_scratch_.data();
  // Causal rows grow with position, so threads take interleaved tasks rather than
  // contiguous halves; each result is independent of the split.
  pool_.run([&](int thread) {
    if (thread >= threads) return;
    float* mine = scratch + per_thread * thread;
    for (int64_t task = thread; task < tasks; task += threads)
      simd::attention_tasks(args, heads_per_task, task, task + 1, mine);
  });
}

}  // namespace glass
