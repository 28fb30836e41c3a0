// safetensors: 8-byte little-endian header length, a JSON header, then raw tensor data.
// Every size and offset in the header is checked against the file before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace glass {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2 };

const char* dtype_name(DType t);
size_t dtype_size(DType t);
// Parses a safetensors dtype string ("BF16", ...); false if unknown.
bool parse_dtype(const std::string& s, DType* out);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;  // points into the mapped file
  size_t nbytes = 0;
  std::string file;  // the file it lives in, for messages

  int64_t numel() const;
  std::string shape_string() const;  // "[896, 151936]"
};

// The largest header we accept; the reference implementation uses the same bound.
inline constexpr uint64_t kMaxSafetensorsHeader = 100u << 20;

class SafetensorsFile {
 public:
  // Maps and validates `path`. Throws glass::Error naming the file and the tensor or field.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorInfo* find(const std::string& name) const;
  const MappedFile& mapping() const { return file_; }

 private:
  MappedFile file_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;
  size_t nbytes;
};

// Writes a safetensors file (atomically: a temporary file, then rename).
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The same, producing tensor data one tensor at a time so that a checkpoint larger
// than memory can be written: `fill(i, buffer)` writes tensor i's nbytes into buffer.
// The `data` fields of `tensors` are ignored.
void write_safetensors_streamed(const std::string& path, const std::vector<TensorToWrite>& tensors,
                                const std::function<void(size_t, std::byte*)>& fill,
                                const std::map<std::string, std::string>& metadata = {});

}  // namespace glass
