// The fast CPU path: SIMD kernels (simd_kernels.h) split across a thread pool.
// Work is split by output rows (matmul) or by (token, head) pairs (attention), never
// by the reduction dimension, so the split does not change any result.
#pragma once

#include <vector>

#include "kernels/kernels.h"
#include "kernels/thread_pool.h"

namespace glass {

class CpuKernels final : public Kernels {
 public:
  explicit CpuKernels(ThreadPool& pool) : pool_(pool) {}
  const char* name() const override { return "cpu"; }
  // The SIMD target chosen for this CPU, e.g. "AVX2".
  static const char* simd_target();

  void matmul(const WeightMatrix& w, const float* x, int64_t n, const float* bias, float* y) override;
  void matmul_multi(const MatmulOutput* outputs, size_t count, const float* x, int64_t n) override;
  void mlp_gate_up(const WeightMatrix& gate, const WeightMatrix& up, const float* x, int64_t n, float* out) override;
  void rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) override;
  void rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) override;
  void silu_mul(const float* gate, const float* up, int64_t count, float* out) override;
  void add(float* x, const float* y, int64_t count) override;
  void attention(const AttentionArgs& args) override;

 private:
  const std::byte* prepare(WeightType type, const float* x, int64_t n, int64_t cols, std::vector<std::byte>& buffer);

  ThreadPool& pool_;
  std::vector<std::byte> prepared_;
  std::vector<std::byte> prepared_up_;  // when gate and up differ in type
  std::vector<float> gate_scratch_, up_scratch_, attention_scratch_;
};

}  // namespace glass
