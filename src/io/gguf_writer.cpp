#include "io/gguf_writer.h"

#include <algorithm>
#include <unordered_set>

#include "base/error.h"
#include "base/mapped_file.h"

namespace glass {

namespace {

void append_u32(std::string& out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

void append_u64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}

void append_string(std::string& out, std::string_view s) {
  append_u64(out, s.size());
  out.append(s);
}

}  // namespace

GgufWriteValue GgufWriteValue::string(std::string_view s) {
  std::string bytes;
  bytes.reserve(8 + s.size());
  append_string(bytes, s);
  return GgufWriteValue(GgufType::String, std::move(bytes));
}

std::string GgufWriteValue::array_header(GgufType element_type, uint64_t count) {
  std::string bytes;
  append_u32(bytes, static_cast<uint32_t>(element_type));
  append_u64(bytes, count);
  return bytes;
}

GgufWriteValue GgufWriteValue::strings(std::span<const std::string> values) {
  size_t total = 12;
  for (const std::string& s : values) total += 8 + s.size();
  std::string bytes = array_header(GgufType::String, values.size());
  bytes.reserve(total);
  for (const std::string& s : values) append_string(bytes, s);
  return GgufWriteValue(GgufType::Array, std::move(bytes));
}

GgufWriteValue GgufWriteValue::strings(std::span<const std::string_view> values) {
  size_t total = 12;
  for (std::string_view s : values) total += 8 + s.size();
  std::string bytes = array_header(GgufType::String, values.size());
  bytes.reserve(total);
  for (std::string_view s : values) append_string(bytes, s);
  return GgufWriteValue(GgufType::Array, std::move(bytes));
}

GgufWriteValue GgufWriteValue::array(GgufType element_type, std::span<const GgufWriteValue> elements) {
  if (static_cast<uint32_t>(element_type) > static_cast<uint32_t>(GgufType::F64))
    fail("GGUF array: element type id ", static_cast<uint32_t>(element_type), " is not a GGUF value type");
  size_t total = 12;
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].type() != element_type)
      fail("GGUF array of ", gguf_type_name(element_type), ": element ", i, " is a ", gguf_type_name(elements[i].type()));
    total += elements[i].encoded().size();
  }
  std::string bytes = array_header(element_type, elements.size());
  bytes.reserve(total);
  for (const GgufWriteValue& e : elements) bytes += e.encoded();
  return GgufWriteValue(GgufType::Array, std::move(bytes));
}

std::vector<int64_t> gguf_ne_of_shape(std::span<const int64_t> shape) { return {shape.rbegin(), shape.rend()}; }

namespace {

struct TensorLayout {
  size_t nbytes;
  uint64_t offset;  // in the data section
};

void write_gguf_impl(const std::string& path, const GgufMetadataToWrite& metadata,
                     const std::vector<GgufTensorToWrite>& tensors,
                     const std::function<void(size_t, std::span<std::byte>)>* fill, uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kMaxGgufAlignment)
    fail(path, ": GGUF alignment ", alignment, "; expected a power of two from 1 to ", kMaxGgufAlignment);

  std::string header = "GGUF";
  append_u32(header, 3);
  append_u64(header, tensors.size());
  bool has_alignment_key = false;
  for (const auto& [key, value] : metadata) {
    if (key == "general.alignment") {
      const bool same = value.type() == GgufType::U32 && value.encoded().size() == 4 &&
                        std::memcmp(value.encoded().data(), &alignment, 4) == 0;
      if (!same) fail(path, ": metadata key \"general.alignment\" must be the u32 ", alignment, " (the alignment written)");
      has_alignment_key = true;
    }
  }
  const bool add_alignment_key = !has_alignment_key && alignment != kGgufDefaultAlignment;
  append_u64(header, metadata.size() + (add_alignment_key ? 1 : 0));

  std::unordered_set<std::string_view> keys;
  for (const auto& [key, value] : metadata) {
    if (key.empty()) fail(path, ": a metadata key is empty");
    if (key.size() > kMaxGgufKeyBytes)
      fail(path, ": metadata key \"", text_excerpt(key), "\" is longer than ", kMaxGgufKeyBytes, " bytes");
    if (!keys.insert(key).second) fail(path, ": metadata key \"", text_excerpt(key), "\" appears twice");
    append_string(header, key);
    append_u32(header, static_cast<uint32_t>(value.type()));
    header += value.encoded();
  }
  if (add_alignment_key) {
    append_string(header, "general.alignment");
    append_u32(header, static_cast<uint32_t>(GgufType::U32));
    append_u32(header, alignment);
  }

  std::vector<TensorLayout> layout;
  layout.reserve(tensors.size());
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  size_t largest = 0;
  for (const GgufTensorToWrite& t : tensors) {
    const std::string where = str_cat(path, ": tensor \"", text_excerpt(t.name), "\"");
    if (t.name.empty()) fail(path, ": a tensor name is empty");
    if (t.name.size() > kMaxGgufTensorNameBytes)
      fail(where, ": the name is longer than ", kMaxGgufTensorNameBytes, " bytes (llama.cpp's limit)");
    if (!names.insert(t.name).second) fail(where, " appears twice");
    if (t.ne.empty() || t.ne.size() > static_cast<size_t>(kMaxGgufDims))
      fail(where, ": ", t.ne.size(), " dimensions; expected 1 to ", kMaxGgufDims);
    const size_t nbytes = gguf_tensor_bytes(t.type, t.ne, where);
    if (fill == nullptr && t.data == nullptr) fail(where, ": no data");
    append_string(header, t.name);
    append_u32(header, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) append_u64(header, static_cast<uint64_t>(d));
    append_u32(header, traits(t.type).ggml_type);
    append_u64(header, offset);
    layout.push_back({nbytes, offset});
    largest = std::max(largest, nbytes);
    const uint64_t padded = (nbytes + alignment - 1) / alignment * alignment;
    if (__builtin_add_overflow(offset, padded, &offset)) fail(where, ": the data section exceeds 64 bits");
  }
  header.resize((header.size() + alignment - 1) / alignment * alignment, '\0');

  OutputFile out(path);
  out.write(header.data(), header.size());
  const std::string padding(alignment, '\0');
  std::vector<std::byte> buffer(fill != nullptr ? largest : 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const size_t n = layout[i].nbytes;
    if (fill != nullptr) {
      (*fill)(i, std::span<std::byte>(buffer.data(), n));
      out.write(buffer.data(), n);
    } else {
      out.write(tensors[i].data, n);
    }
    const size_t pad = (alignment - n % alignment) % alignment;
    if (pad != 0) out.write(padding.data(), pad);
  }
  out.commit();
}

}  // namespace

void write_gguf(const std::string& path, const GgufMetadataToWrite& metadata, const std::vector<GgufTensorToWrite>& tensors,
                uint32_t alignment) {
  write_gguf_impl(path, metadata, tensors, nullptr, alignment);
}

void write_gguf_streamed(const std::string& path, const GgufMetadataToWrite& metadata,
                         const std::vector<GgufTensorToWrite>& tensors,
                         const std::function<void(size_t, std::span<std::byte>)>& fill, uint32_t alignment) {
  write_gguf_impl(path, metadata, tensors, &fill, alignment);
}

GgufWriteValue GgufWriteValue::copy(const GgufValue& v) {
  switch (v.type()) {
    case GgufType::U8: return u8(v.as_integer<uint8_t>());
    case GgufType::I8: return GgufWriteValue::i8(v.as_integer<int8_t>());
    case GgufType::U16: return GgufWriteValue::u16(v.as_integer<uint16_t>());
    case GgufType::I16: return GgufWriteValue::i16(v.as_integer<int16_t>());
    case GgufType::U32: return GgufWriteValue::u32(v.as_u32());
    case GgufType::I32: return GgufWriteValue::i32(v.as_i32());
    case GgufType::U64: return GgufWriteValue::u64(v.as_u64());
    case GgufType::I64: return GgufWriteValue::i64(v.as_i64());
    case GgufType::F32: return GgufWriteValue::f32(v.as_f32());
    case GgufType::F64: return GgufWriteValue::f64(v.as_f64());
    case GgufType::Bool: return GgufWriteValue::boolean(v.as_bool());
    case GgufType::String: return GgufWriteValue::string(v.as_string());
    case GgufType::Array: break;
  }
  const GgufArray a = v.as_array();
  switch (a.element_type()) {
    case GgufType::String: {
      std::vector<std::string_view> s;
      s.reserve(a.size());
      for (std::string_view e : a.strings()) s.push_back(e);
      return GgufWriteValue::strings(std::span<const std::string_view>(s));
    }
    case GgufType::U8: return GgufWriteValue::numbers(a.to_vector<uint8_t>());
    case GgufType::I8: return GgufWriteValue::numbers(a.to_vector<int8_t>());
    case GgufType::U16: return GgufWriteValue::numbers(a.to_vector<uint16_t>());
    case GgufType::I16: return GgufWriteValue::numbers(a.to_vector<int16_t>());
    case GgufType::U32: return GgufWriteValue::numbers(a.to_vector<uint32_t>());
    case GgufType::I32: return GgufWriteValue::numbers(a.to_vector<int32_t>());
    case GgufType::U64: return GgufWriteValue::numbers(a.to_vector<uint64_t>());
    case GgufType::I64: return GgufWriteValue::numbers(a.to_vector<int64_t>());
    case GgufType::F32: return GgufWriteValue::numbers(a.to_vector<float>());
    case GgufType::F64: return GgufWriteValue::numbers(a.to_vector<double>());
    default: {
      std::vector<GgufWriteValue> elements;
      for (size_t i = 0; i < a.size(); ++i) elements.push_back(copy(a.at(i)));
      return GgufWriteValue::array(a.element_type(), elements);
    }
  }
}

}  // namespace glass
