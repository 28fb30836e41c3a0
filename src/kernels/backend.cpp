#include "kernels/backend.h"

#include <cstdio>

#include "base/error.h"
#include "kernels/cpu_kernels.h"
#include "kernels/reference_kernels.h"

namespace glass {

Backend::Backend(const std::string& name, int threads, MatmulPrecision precision) : name_(name) {
  if (threads < 0) fail("--threads: must be 0 (all CPUs) or positive, got ", threads);
  // The pool's workers spin between jobs: more threads than CPUs only take turns (1000
  // threads on 2 CPUs ran 800x slower), and past a few thousand they cannot start.
  const int cpus = ThreadPool::hardware_threads();
  if (threads > cpus)
    fail("--threads ", threads, ": more threads than the ", cpus, " CPUs this process may run on; at most ", cpus,
         " (0 uses them all)");
  if (name == "cpu") {
    // Detection first: it requests the AMX permission, before any worker thread starts.
    CpuFeatures features = CpuFeatures::detect();
    pool_ = std::make_unique<ThreadPool>(threads);
    auto cpu = std::make_unique<CpuKernels>(*pool_, features, precision);
    if (cpu->features().note != features.note) std::fprintf(stderr, "glass: %s\n", cpu->features().note.c_str());
    kernels_ = std::move(cpu);
  } else if (name == "reference") {
    kernels_ = std::make_unique<ReferenceKernels>(precision);
  } else {
    fail("--kernels: \"", name, "\" is not one of cpu, reference");
  }
}

std::string Backend::description() const {
  const char* precision = kernels_->matmul_precision() == MatmulPrecision::Bf16 ? ", bf16 activations" : "";
  if (name_ == "reference") return str_cat("reference (scalar, 1 thread", precision, ")");
  const auto& cpu = static_cast<const CpuKernels&>(*kernels_);
  return str_cat("cpu (", cpu.simd_path(), ", ", threads(), threads() == 1 ? " thread" : " threads", precision, ")");
}

}  // namespace glass
