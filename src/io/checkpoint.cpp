#include "io/checkpoint.h"

#include <sys/stat.h>

#include "base/error.h"
#include "base/json_fields.h"

namespace glass {

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  if (!path_exists(dir)) fail(dir, ": model folder does not exist");
  if (!is_directory(dir)) fail(dir, ": not a folder (expected a Hugging Face checkpoint folder)");
  config_path_ = dir + "/config.json";
  if (!path_exists(config_path_))
    fail(config_path_, ": missing; a checkpoint folder needs config.json beside its weights");
  config_ = load_model_config(config_path_);

  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  if (path_exists(index_path)) {
    open_index(index_path);
  } else if (path_exists(single_path)) {
    files_.push_back(std::make_unique<SafetensorsFile>(single_path));
    weight_files_.push_back(single_path);
    for (const auto& [name, info] : files_.back()->tensors()) by_name_[name] = &info;
  } else {
    fail(dir, ": no weights: expected model.safetensors or model.safetensors.index.json with its shards");
  }
}

void Checkpoint::open_index(const std::string& index_path) {
  Json index = read_json_file(index_path);
  auto map_it = index.find("weight_map");
  if (!index.is_object() || map_it == index.end() || !map_it->is_object())
    fail(index_path, ": field \"weight_map\" must be an object mapping tensor names to shard files");
  std::map<std::string, const SafetensorsFile*> shards;
  for (auto it = map_it->begin(); it != map_it->end(); ++it) {
    if (!it.value().is_string())
      fail(index_path, ": weight_map entry for \"", it.key(), "\" must be a file name string");
    const std::string shard = it.value().get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      fail(index_path, ": weight_map entry for \"", it.key(), "\" names \"", shard,
           "\"; shards must be plain file names in the same folder");
    auto s = shards.find(shard);
    if (s == shards.end()) {
      const std::string shard_path = dir_ + "/" + shard;
      if (!path_exists(shard_path))
        fail(index_path, ": shard \"", shard, "\" (holding \"", it.key(), "\") is missing from ", dir_);
      files_.push_back(std::make_unique<SafetensorsFile>(shard_path));
      weight_files_.push_back(shard_path);
      s = shards.emplace(shard, files_.back().get()).first;
    }
    const TensorInfo* info = s->second->find(it.key());
    if (info == nullptr)
      fail(index_path, ": tensor \"", it.key(), "\" is mapped to \"", shard, "\" but that shard does not contain it");
    by_name_[it.key()] = info;
  }
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const TensorInfo& Checkpoint::get(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (t == nullptr) {
    std::string files;
    for (const auto& f : weight_files_) files += (files.empty() ? "" : ", ") + f;
    fail(dir_, ": tensor \"", name, "\" is missing (searched ", files, ")");
  }
  return *t;
}

std::vector<const TensorInfo*> Checkpoint::tensors() const {
  std::vector<const TensorInfo*> out;
  out.reserve(by_name_.size());
  for (const auto& [_, t] : by_name_) out.push_back(t);
  return out;
}

size_t Checkpoint::weight_bytes() const {
  size_t n = 0;
  for (const auto& [_, t] : by_name_) n += t->nbytes;
  return n;
}

}  // namespace glass
