#include "cli/model_source.h"

#include <iostream>

#include "base/error.h"
#include "io/checkpoint.h"

namespace glass::cli {

std::string demo_model_dir() { return GLASS_DEMO_MODEL_DIR; }

std::string resolve_model_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  const std::string dir = demo_model_dir();
  if (!path_exists(dir + "/model.safetensors"))
    fail("no -m given and the built-in demo model is missing at ", dir, " (build the demo_model target)");
  std::cerr << "glass: no -m given: using the built-in demo model (random weights; its output is meaningless)\n";
  return dir;
}

}  // namespace glass::cli
