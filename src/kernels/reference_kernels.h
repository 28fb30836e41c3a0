// Plain scalar kernels: the forward pass's oracle. Double accumulation, no threads.
#pragma once

#include "kernels/kernels.h"

namespace glass {

class ReferenceKernels final : public Kernels {
 public:
  explicit ReferenceKernels(MatmulPrecision precision = MatmulPrecision::Float) : Kernels(precision) {}
  const char* name() const override { return "reference"; }
  void matmul(const WeightMatrix& w, const float* x, int64_t n, const float* bias, float* y) override;
  void rmsnorm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* y) override;
  void rope(float* x, int64_t n, int64_t heads, int64_t head_dim, const float* cos, const float* sin) override;
  void silu_mul(const float* gate, const float* up, int64_t count, float* out) override;
  void add(float* x, const float* y, int64_t count) override;
  void attention(const AttentionArgs& args) override;
};

// Reads element i of a KV-cache row of type t.
float load_kv(KVType t, const std::byte* row, int64_t i);
// Writes `count` floats as a KV-cache row of type t (round to nearest even).
void store_kv_row(KVType t, const float* src, int64_t count, std::byte* dst);

}  // namespace glass
