// A Hugging Face checkpoint folder as downloaded: config.json plus model.safetensors,
// or shards listed by model.safetensors.index.json. Tensors stay memory-mapped.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "io/safetensors.h"

namespace glass {

class Checkpoint {
 public:
  // Opens `dir`: validates config.json, maps every weight file. Throws glass::Error.
  explicit Checkpoint(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const std::string& config_path() const { return config_path_; }
  const std::vector<std::string>& weight_files() const { return weight_files_; }

  // nullptr when absent.
  const TensorInfo* find(const std::string& name) const;
  // Throws naming the tensor and the weight files searched.
  const TensorInfo& get(const std::string& name) const;
  // Every tensor, sorted by name.
  std::vector<const TensorInfo*> tensors() const;
  size_t weight_bytes() const;

 private:
  void open_index(const std::string& index_path);
  std::string dir_;
  std::string config_path_;
  ModelConfig config_;
  std::vector<std::string> weight_files_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> by_name_;
};

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);

}  // namespace glass
