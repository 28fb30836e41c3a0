#include "cli/model_source.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "base/error.h"
#include "cli/hf_cache.h"
#include "io/checkpoint.h"

namespace glass::cli {

std::string demo_model_dir() { return GLASS_DEMO_MODEL_DIR; }

std::string local_model_path(const std::string& path, const std::string& json_kind) {
  if (is_directory(path) || (path_exists(path) && is_gguf_path(path))) return path;
  const std::string takes = str_cat("-m takes a checkpoint folder (config.json, tokenizer.json, *.safetensors) or a .gguf file",
                                    json_kind.empty() ? "" : " or a " + json_kind + " file");
  if (!path_exists(path)) {
    if (const std::optional<HfModelId> id = parse_hf_model_id(path)) {
      const std::string found = find_in_hf_cache(*id, hf_cache_root([](const char* name) { return std::getenv(name); }), path);
      std::cerr << "glass: -m " << path << ": " << found << " (the Hugging Face cache)\n";
      return found;
    }
    fail("-m ", path, ": no such file or folder; ", takes, ", or ORG/NAME of a model in the Hugging Face cache");
  }
  if (!json_kind.empty() && path.ends_with(".json") && !path.ends_with(".safetensors.index.json")) return path;
  if (path.ends_with(".safetensors") || path.ends_with(".safetensors.index.json")) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    fail("-m ", path, ": is a safetensors weight file, not a model; ", takes, ": here -m ", folder.empty() ? "." : folder);
  }
  fail("-m ", path, ": is neither a checkpoint folder nor a GGUF file; ", takes);
}

std::string resolve_model_dir(const std::string& flag) {
  if (!flag.empty()) {
    return local_model_path(flag, "");
  }
  const std::string dir = demo_model_dir();
  if (!path_exists(dir + "/model.safetensors"))
    fail("no -m given and the built-in demo model is missing at ", dir, " (build the demo_model target)");
  std::cerr << "glass: no -m given: using the built-in demo model (random weights; its output is meaningless)\n";
  return dir;
}

}  // namespace glass::cli
