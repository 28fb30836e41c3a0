// Writing GGUF v3: metadata of every GGUF value type, tensor infos, tensor data aligned
// to any power of two, in llama.cpp's layout (tensors in the order given, each padded to
// the alignment). The file is written through OutputFile: an error leaves no partial file.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/gguf.h"
#include "quant/weight_type.h"

namespace glass {

static_assert(std::endian::native == std::endian::little, "GGUF is written in the host's byte order");

// A metadata value to write, encoded as GGUF stores it when it is made.
class GgufWriteValue {
 public:
  static GgufWriteValue u8(uint8_t v) { return scalar(GgufType::U8, v); }
  static GgufWriteValue i8(int8_t v) { return scalar(GgufType::I8, v); }
  static GgufWriteValue u16(uint16_t v) { return scalar(GgufType::U16, v); }
  static GgufWriteValue i16(int16_t v) { return scalar(GgufType::I16, v); }
  static GgufWriteValue u32(uint32_t v) { return scalar(GgufType::U32, v); }
  static GgufWriteValue i32(int32_t v) { return scalar(GgufType::I32, v); }
  static GgufWriteValue u64(uint64_t v) { return scalar(GgufType::U64, v); }
  static GgufWriteValue i64(int64_t v) { return scalar(GgufType::I64, v); }
  static GgufWriteValue f32(float v) { return scalar(GgufType::F32, v); }
  static GgufWriteValue f64(double v) { return scalar(GgufType::F64, v); }
  static GgufWriteValue boolean(bool v) { return scalar(GgufType::Bool, static_cast<uint8_t>(v ? 1 : 0)); }
  static GgufWriteValue string(std::string_view s);
  // A value read from a GGUF file, to be written again unchanged (arrays of any depth).
  static GgufWriteValue copy(const GgufValue& v);

  // Arrays. Numbers: T is uint8_t ... int64_t, float or double.
  template <class T>
  static GgufWriteValue numbers(std::span<const T> values);
  template <class T>
  static GgufWriteValue numbers(const std::vector<T>& values) { return numbers(std::span<const T>(values)); }
  static GgufWriteValue strings(std::span<const std::string> values);
  static GgufWriteValue strings(std::span<const std::string_view> values);
  static GgufWriteValue strings(const std::vector<std::string>& values) { return strings(std::span<const std::string>(values)); }
  // Any array: `elements` each of `element_type` (an array of arrays: element_type Array,
  // the inner arrays of any element types). A mismatch is a glass::Error.
  static GgufWriteValue array(GgufType element_type, std::span<const GgufWriteValue> elements);
  static GgufWriteValue array(GgufType element_type, const std::vector<GgufWriteValue>& elements) {
    return array(element_type, std::span<const GgufWriteValue>(elements));
  }

  GgufType type() const { return type_; }
  // What follows the value's type id in the file.
  const std::string& encoded() const { return bytes_; }

 private:
  GgufWriteValue(GgufType type, std::string bytes) : type_(type), bytes_(std::move(bytes)) {}
  template <class T>
  static GgufWriteValue scalar(GgufType type, T v) {
    std::string bytes(sizeof v, '\0');
    std::memcpy(bytes.data(), &v, sizeof v);
    return GgufWriteValue(type, std::move(bytes));
  }
  static std::string array_header(GgufType element_type, uint64_t count);

  GgufType type_;
  std::string bytes_;
};

// Keys and values in the order they are written.
using GgufMetadataToWrite = std::vector<std::pair<std::string, GgufWriteValue>>;

struct GgufTensorToWrite {
  std::string name;  // 1 to kMaxGgufTensorNameBytes bytes, unique
  WeightType type = WeightType::F32;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the row length; 1 to 4 dimensions, each >= 1
  const void* data = nullptr;  // gguf_tensor_bytes(type, ne) bytes; write_gguf_streamed ignores it
};

// The dimensions in ggml order of a PyTorch shape ([rows, cols] -> [cols, rows]).
std::vector<int64_t> gguf_ne_of_shape(std::span<const int64_t> shape);

// Writes `path` as GGUF v3. `alignment` (a power of two up to kMaxGgufAlignment) aligns
// the data section and each tensor; the writer adds general.alignment when it is not the
// default, and a general.alignment in `metadata` must be a u32 equal to it. Throws
// glass::Error naming the path and the key or tensor for an empty, long or repeated key or
// tensor name, a bad shape, or a write error; nothing is left at `path` then.
void write_gguf(const std::string& path, const GgufMetadataToWrite& metadata, const std::vector<GgufTensorToWrite>& tensors,
                uint32_t alignment = kGgufDefaultAlignment);

// The same, producing tensor data one tensor at a time so that a model larger than memory
// can be written: `fill(i, out)` writes tensor i's bytes into `out` (exactly its size).
void write_gguf_streamed(const std::string& path, const GgufMetadataToWrite& metadata,
                         const std::vector<GgufTensorToWrite>& tensors,
                         const std::function<void(size_t, std::span<std::byte>)>& fill,
                         uint32_t alignment = kGgufDefaultAlignment);

// ---- template definitions ----

template <class T>
GgufWriteValue GgufWriteValue::numbers(std::span<const T> values) {
  std::string bytes = array_header(gguf_type_of<T>(), values.size());
  const size_t at = bytes.size();
  bytes.resize(at + values.size_bytes());
  if (!values.empty()) std::memcpy(bytes.data() + at, values.data(), values.size_bytes());
  return GgufWriteValue(GgufType::Array, std::move(bytes));
}

}  // namespace glass
