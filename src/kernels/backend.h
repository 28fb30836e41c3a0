// A set of kernels with the threads they run on: "cpu" (SIMD, threaded) or
// "reference" (scalar, single-threaded, the oracle).
#pragma once

#include <memory>
#include <string>

#include "kernels/kernels.h"
#include "kernels/thread_pool.h"

namespace glass {

class Backend {
 public:
  // `threads` 0 means every online CPU (ignored by the reference). Throws naming
  // the backend when it is unknown.
  Backend(const std::string& name, int threads, MatmulPrecision precision = MatmulPrecision::Float);
  Kernels& kernels() { return *kernels_; }
  const std::string& name() const { return name_; }
  int threads() const { return pool_ ? pool_->size() : 1; }
  // "cpu (AVX2, 2 threads)" or "reference (scalar, 1 thread)", with ", bf16 activations"
  // under MatmulPrecision::Bf16.
  std::string description() const;

 private:
  std::string name_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Kernels> kernels_;
};

}  // namespace glass
