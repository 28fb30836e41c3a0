// Options every command that runs the model shares: kernels, threads, weight and
// KV-cache types.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "kernels/backend.h"
#include "model/decoder_model.h"

namespace glass::cli {

struct RuntimeOptions {
  std::string kernels = "cpu";
  int threads = 0;
  std::string weight_type;  // empty: as stored
  std::string kv_type;      // empty: the command's default

  void add_to(CLI::App* sub, const std::string& default_kv);
  LoadOptions load_options() const;
  KVType kv() const;
  std::unique_ptr<Backend> backend() const;
};

}  // namespace glass::cli
