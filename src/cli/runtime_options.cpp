#include "cli/runtime_options.h"

#include <iostream>

#include "base/error.h"
#include "cli/help_groups.h"

namespace glass::cli {

void RuntimeOptions::add_to(CLI::App* sub, bool quiet_flag) {
  const size_t first = sub->get_options().size();
  sub->add_option("--kernels", kernels, "cpu (SIMD, threaded) or reference (scalar oracle)")->capture_default_str();
  sub->add_option("-t,--threads", threads, "Threads (0: every CPU)")->capture_default_str();
  sub->add_option("--weight-type", weight_type,
                  str_cat("Convert weight matrices at load: ", encodable_weight_type_names(), " (default: as stored)"));
  sub->add_option("--kv-type", kv_type, "KV-cache element type: f32, f16, bf16")->capture_default_str();
  sub->add_option("--matmul-precision", matmul_precision,
                  "What bf16 weights multiply: float (the activations as they are, within 1e-4 of a float64 "
                  "forward) or bf16 (activations rounded to bf16, as llama.cpp and transformers in bfloat16 do; "
                  "AVX512-BF16 dot products where the CPU has them, about twice the prefill speed)")
      ->capture_default_str();
  sub->add_option_function<int>(
      "--n-gpu-layers", [this](const int& n) { gpu_layers = n; },
      "llama.cpp's -ngl N: accepted and ignored (this build runs on the CPU)");
  if (quiet_flag)
    sub->add_flag("-q,--quiet", quiet, "No progress bars (they are drawn only when stderr is a terminal)");
  put_added_since(sub, first, "Performance");
}

LoadOptions RuntimeOptions::load_options() const {
  LoadOptions o;
  if (!weight_type.empty()) {
    WeightType t;
    if (!parse_weight_type(weight_type, &t) || traits(t).quantize == nullptr)
      fail("--weight-type: \"", text_excerpt(weight_type), "\" is not one of ", encodable_weight_type_names());
    o.weight_type = t;
  }
  return o;
}

KVType RuntimeOptions::kv() const {
  KVType t;
  if (!parse_kv_type(kv_type.c_str(), &t)) fail("--kv-type: \"", kv_type, "\" is not one of f32, f16, bf16");
  return t;
}

MatmulPrecision RuntimeOptions::precision() const {
  MatmulPrecision p;
  if (!parse_matmul_precision(matmul_precision.c_str(), &p))
    fail("--matmul-precision: \"", text_excerpt(matmul_precision), "\" is not one of float, bf16");
  return p;
}

std::unique_ptr<Backend> RuntimeOptions::backend() const {
  const MatmulPrecision p = precision();  // a bad value fails before the note below
  if (gpu_layers)
    std::cerr << "glass: -ngl/--n-gpu-layers " << *gpu_layers << " ignored: this build runs on the CPU (--kernels "
              << kernels << ")\n";
  return std::make_unique<Backend>(kernels, threads, p);
}

}  // namespace glass::cli
