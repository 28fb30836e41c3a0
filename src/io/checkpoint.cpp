#include "io/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string_view>

#include "base/error.h"
#include "base/json_fields.h"
#include "io/gguf.h"
#include "io/gguf_model.h"
#include "io/safetensors.h"

namespace glass {

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_gguf_path(const std::string& path) {
  if (is_directory(path)) return false;
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0) return true;
  // A GGUF saved under another name (a download without its extension) by its magic.
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, sizeof magic) && std::string_view(magic, sizeof magic) == "GGUF";
}

int64_t CheckpointTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string CheckpointTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Checkpoint::Checkpoint(const std::string& path) : path_(path) {
  if (!path_exists(path)) fail(path, ": does not exist (expected a checkpoint folder or a .gguf file)");
  if (is_gguf_path(path)) {
    open_gguf();
  } else if (is_directory(path)) {
    open_folder();
  } else {
    fail(path, ": not a folder or a .gguf file (expected a Hugging Face checkpoint folder or a llama.cpp GGUF file)");
  }
}

Checkpoint::~Checkpoint() = default;

void Checkpoint::open_gguf() {
  format_ = CheckpointFormat::kGguf;
  gguf_ = std::make_unique<GgufSet>(path_);
  config_path_ = gguf_->path() + " (metadata)";
  config_ = model_config_from_gguf(*gguf_);
  for (const GgufFile& part : gguf_->parts()) weight_files_.push_back(part.path());
  for (const GgufTensor* t : gguf_->tensors()) {
    CheckpointTensor& c = by_name_[t->name];
    c.name = t->name;
    c.type = t->type;
    c.dtype = weight_type_name(t->type);
    c.shape = t->shape;
    c.data = t->data;
    c.nbytes = t->nbytes;
    c.file = std::string(t->file);
  }
}

void Checkpoint::open_folder() {
  const std::string& dir = path_;
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
    add_safetensors(*files_.back());
  } else {
    fail(dir, ": no weights: expected model.safetensors or model.safetensors.index.json with its shards (or give a .gguf file)");
  }
}

namespace {

// The safetensors dtypes weights can be computed in.
std::optional<WeightType> weight_type_of(DType d) {
  switch (d) {
    case DType::F32: return WeightType::F32;
    case DType::F16: return WeightType::F16;
    case DType::BF16: return WeightType::BF16;
    default: return std::nullopt;
  }
}

}  // namespace

void Checkpoint::add_safetensors(const SafetensorsFile& file, const std::string& only) {
  for (const auto& [name, info] : file.tensors()) {
    if (!only.empty() && name != only) continue;
    CheckpointTensor& c = by_name_[name];
    c.name = name;
    c.type = weight_type_of(info.dtype);
    c.dtype = dtype_name(info.dtype);
    c.shape = info.shape;
    c.data = info.data;
    c.nbytes = info.nbytes;
    c.file = info.file;
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
      const std::string shard_path = path_ + "/" + shard;
      if (!path_exists(shard_path))
        fail(index_path, ": shard \"", shard, "\" (holding \"", it.key(), "\") is missing from ", path_);
      files_.push_back(std::make_unique<SafetensorsFile>(shard_path));
      weight_files_.push_back(shard_path);
      s = shards.emplace(shard, files_.back().get()).first;
    }
    if (s->second->find(it.key()) == nullptr)
      fail(index_path, ": tensor \"", it.key(), "\" is mapped to \"", shard, "\" but that shard does not contain it");
    add_safetensors(*s->second, it.key());
  }
}

const CheckpointTensor* Checkpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

const CheckpointTensor& Checkpoint::get(const std::string& name) const {
  const CheckpointTensor* t = find(name);
  if (t == nullptr) {
    std::string files;
    for (const auto& f : weight_files_) files += (files.empty() ? "" : ", ") + f;
    fail(path_, ": tensor \"", name, "\" is missing (searched ", files, ")");
  }
  return *t;
}

std::vector<const CheckpointTensor*> Checkpoint::tensors() const {
  std::vector<const CheckpointTensor*> out;
  out.reserve(by_name_.size());
  for (const auto& [_, t] : by_name_) out.push_back(&t);
  return out;
}

size_t Checkpoint::weight_bytes() const {
  size_t n = 0;
  for (const auto& [_, t] : by_name_) n += t.nbytes;
  return n;
}

std::vector<const MappedFile*> Checkpoint::mappings() const {
  std::vector<const MappedFile*> maps;
  for (const auto& file : files_) maps.push_back(&file->mapping());
  if (gguf_)
    for (const GgufFile& part : gguf_->parts()) maps.push_back(&part.mapping());
  return maps;
}

void Checkpoint::release_pages(const std::byte* begin, size_t bytes) const {
  // Each map ignores what is not its own.
  for (const MappedFile* map : mappings()) map->release_pages(begin, bytes);
}

bool Checkpoint::read(const std::byte* begin, size_t bytes, std::byte* out) const {
  for (const MappedFile* map : mappings())
    if (map->read(begin, bytes, out)) return true;
  return false;
}

void Checkpoint::release_pages_except(std::vector<std::pair<const std::byte*, size_t>> keep) const {
  std::sort(keep.begin(), keep.end());
  for (const MappedFile* map : mappings()) {
    // The gaps between kept ranges; release_pages keeps a page a kept range touches.
    const std::byte* const end = map->data() + map->size();
    const std::byte* from = map->data();
    for (const auto& [begin, bytes] : keep) {
      if (begin + bytes <= map->data() || begin >= end) continue;
      if (begin > from) map->release_pages(from, static_cast<size_t>(begin - from));
      from = std::max(from, begin + bytes);
    }
    if (from < end) map->release_pages(from, static_cast<size_t>(end - from));
  }
}

}  // namespace glass
