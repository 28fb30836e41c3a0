// Options every command that runs the model shares: kernels, threads, weight and
// KV-cache types.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "kernels/backend.h"
#include "model/decoder_model.h"

namespace glass::cli {

// The KV-cache element type when --kv-type is not given: one for every command, so that
// what `inspect` reports is what `run`, `chat`, `serve` and `bench` allocate.
inline constexpr const char* kDefaultKVType = "f32";

struct RuntimeOptions {
  std::string kernels = "cpu";
  int threads = 0;
  std::string weight_type;  // empty: as stored
  std::string kv_type = kDefaultKVType;
  std::string matmul_precision = "float";
  std::optional<int> gpu_layers;  // llama.cpp's -ngl: accepted so its command lines run; nothing to offload to
  bool quiet = false;             // no progress bars

  // `quiet_flag`: add -q/--quiet (a command with its own --quiet sets `quiet` itself).
  void add_to(CLI::App* sub, bool quiet_flag = true);
  LoadOptions load_options() const;
  KVType kv() const;
  MatmulPrecision precision() const;
  // The kernels; says on stderr that -ngl is ignored when it was given (every command that
  // runs the model calls this once).
  std::unique_ptr<Backend> backend() const;
};

}  // namespace glass::cli
