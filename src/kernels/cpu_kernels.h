// The fast CPU path: SIMD kernels (simd_kernels.h) split across a thread pool.
// Work is split by output rows (matmul) or by (token, head) pairs (attention), never
// by the reduction dimension, so the split does not change any result.
#pragma once

#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/thread_pool.h"

namespace glass {

// Which instruction-set extensions beyond the dispatched SIMD target the kernels use;
// tests turn them off to check each path against the others.
struct CpuFeatures {
  bool avx512_vnni = false;  // int8 dot products in one instruction (interleaved q8_0 / q4_0)
  static CpuFeatures detect();  // everything this CPU has
};

class CpuKernels final : public Kernels {
 public:
  explicit CpuKernels(ThreadPool& pool, CpuFeatures features = CpuFeatures::detect())
      : pool_(pool), features_(features) {}
  const char* name() const override { return "cpu"; }
  // The SIMD target chosen for this CPU, e.g. "AVX2", and the extensions used beside it
  // ("AVX3 + VNNI").
  static const char* simd_target();
  std::string simd_path() const;

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
  // simd::matmul_rows, or for a type without a kernel its rows decoded to f32 first.
  void matmul_rows(const WeightMatrix& w, const std::byte* xp, int64_t n, int64_t row_begin, int64_t row_end,
                   const float* bias, float* y) const;

  ThreadPool& pool_;
  CpuFeatures features_;
  std::vector<std::byte> prepared_;
  std::vector<std::byte> prepared_up_;  // when gate and up differ in type
  std::vector<float> gate_scratch_, up_scratch_, attention_scratch_;
};

}  // namespace glass
