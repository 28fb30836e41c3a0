// A model's weights and description as downloaded: a Hugging Face checkpoint folder
// (config.json plus model.safetensors, or shards listed by model.safetensors.index.json),
// or a llama.cpp GGUF file (one file or a gguf-split set). Tensors stay memory-mapped.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "quant/weight_type.h"

namespace glass {

class GgufSet;
class MappedFile;
class SafetensorsFile;

enum class CheckpointFormat { kHuggingFace, kGguf };

// A tensor as the model loader sees it, whatever the file format.
struct CheckpointTensor {
  std::string name;                // as the file names it
  std::optional<WeightType> type;  // unset: a dtype glass computes nothing with (e.g. I64)
  std::string dtype;               // the file's own name for its type: "BF16", "q4_K"
  std::vector<int64_t> shape;      // PyTorch order: [rows, cols] for a matrix
  const std::byte* data = nullptr;  // into the mapped file
  size_t nbytes = 0;
  std::string file;  // the file it lives in, for messages

  int64_t numel() const;
  std::string shape_string() const;  // "[896, 151936]"
};

// Whether `path` names a GGUF file: by its name, as llama.cpp users name them, or by the
// magic at its start.
bool is_gguf_path(const std::string& path);

class Checkpoint {
 public:
  // Opens a checkpoint folder or a .gguf file: validates the description, maps every
  // weight file. Throws glass::Error (glass::Unsupported for a well-formed model glass
  // does not run).
  explicit Checkpoint(const std::string& path);
  ~Checkpoint();

  CheckpointFormat format() const { return format_; }
  // The folder, or the GGUF file's path.
  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  // What messages name as the model's description: config.json, or the GGUF's metadata.
  const std::string& config_path() const { return config_path_; }
  const std::vector<std::string>& weight_files() const { return weight_files_; }
  // The GGUF set, for its metadata (tokenizer, chat template); null for a folder.
  const GgufSet* gguf() const { return gguf_.get(); }

  // nullptr when absent.
  const CheckpointTensor* find(const std::string& name) const;
  // Throws naming the tensor and the weight files searched.
  const CheckpointTensor& get(const std::string& name) const;
  // Every tensor, sorted by name.
  std::vector<const CheckpointTensor*> tensors() const;
  size_t weight_bytes() const;
  // A tensor's bytes (or part of them) will not be read again: their whole pages leave
  // this process's memory (MappedFile::release_pages). For weights converted at load.
  void release_pages(const std::byte* begin, size_t bytes) const;
  // These bytes of a weight file into `out`, read rather than mapped (MappedFile::read);
  // false when they are no weight file's or the read fails.
  bool read(const std::byte* begin, size_t bytes, std::byte* out) const;
  // Every page of the weight files but those holding bytes of `keep` (ranges read in place).
  void release_pages_except(std::vector<std::pair<const std::byte*, size_t>> keep) const;

 private:
  void open_folder();
  void open_index(const std::string& index_path);
  void add_safetensors(const SafetensorsFile& file, const std::string& only = "");
  void open_gguf();
  // Every weight file's map: the safetensors files, or the GGUF's parts.
  std::vector<const MappedFile*> mappings() const;

  CheckpointFormat format_ = CheckpointFormat::kHuggingFace;
  std::string path_;
  std::string config_path_;
  ModelConfig config_;
  std::vector<std::string> weight_files_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<GgufSet> gguf_;
  std::map<std::string, CheckpointTensor> by_name_;
};

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);

}  // namespace glass
