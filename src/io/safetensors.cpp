#include "io/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "base/json_fields.h"

namespace glass {

namespace {

struct DTypeEntry {
  DType type;
  const char* name;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {DType::F64, "F64", 8},     {DType::F32, "F32", 4},         {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},   {DType::I64, "I64", 8},         {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},     {DType::I8, "I8", 1},           {DType::U64, "U64", 8},
    {DType::U32, "U32", 4},     {DType::U16, "U16", 2},         {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},   {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
};

const DTypeEntry& entry(DType t) {
  for (const auto& e : kDTypes)
    if (e.type == t) return e;
  return kDTypes[0];
}

uint64_t read_le64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

const char* dtype_name(DType t) { return entry(t).name; }
size_t dtype_size(DType t) { return entry(t).size; }

bool parse_dtype(const std::string& s, DType* out) {
  for (const auto& e : kDTypes) {
    if (s == e.name) {
      *out = e.type;
      return true;
    }
  }
  return false;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const size_t size = file_.size();
  if (size < 8)
    fail(path, ": truncated safetensors file: ", size, " bytes, shorter than the 8-byte header length");
  const uint64_t header_len = read_le64(file_.data());
  if (header_len > kMaxSafetensorsHeader)
    fail(path, ": safetensors header length ", header_len, " exceeds the ", kMaxSafetensorsHeader,
         "-byte limit");
  if (header_len > size - 8)
    fail(path, ": safetensors header length ", header_len, " points past the end of the file (",
         size, " bytes)");
  const std::byte* header_begin = file_.data() + 8;
  std::string header_text(reinterpret_cast<const char*>(header_begin), header_len);
  Json header = parse_json(header_text, path + " (safetensors header)");
  if (!header.is_object()) fail(path, ": safetensors header must be a JSON object");

  const std::byte* data_begin = header_begin + header_len;
  const uint64_t data_size = size - 8 - header_len;

  struct Span {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const Json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(path, ": \"__metadata__\" must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          fail(path, ": \"__metadata__\" value for \"", m.key(), "\" must be a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor \"" + name + "\"";
    if (!v.is_object()) fail(where, ": entry must be an object");
    TensorInfo t;
    t.name = name;
    t.file = path;
    std::string dt = json_string(v, "dtype", where);
    if (!parse_dtype(dt, &t.dtype)) fail(where, ": unknown dtype \"", dt, "\"");
    auto shape_it = v.find("shape");
    if (shape_it == v.end() || !shape_it->is_array()) fail(where, ": \"shape\" must be an array");
    uint64_t numel = 1;
    for (const Json& d : *shape_it) {
      if (!d.is_number_unsigned()) fail(where, ": \"shape\" entries must be non-negative integers");
      uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim / 8)
        fail(where, ": shape ", json_excerpt(*shape_it), " is too large");
      numel *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    auto off_it = v.find("data_offsets");
    if (off_it == v.end() || !off_it->is_array() || off_it->size() != 2 ||
        !(*off_it)[0].is_number_unsigned() || !(*off_it)[1].is_number_unsigned())
      fail(where, ": \"data_offsets\" must be [begin, end] with non-negative integers");
    uint64_t begin = (*off_it)[0].get<uint64_t>();
    uint64_t end = (*off_it)[1].get<uint64_t>();
    if (begin > end) fail(where, ": data_offsets [", begin, ", ", end, "] has begin after end");
    if (end > data_size)
      fail(where, ": data_offsets [", begin, ", ", end, "] point past the end of the file (data section is ",
           data_size, " bytes; the file is truncated or the header lies)");
    uint64_t expected = numel * dtype_size(t.dtype);
    if (end - begin != expected)
      fail(where, ": data_offsets span ", end - begin, " bytes but shape ", json_excerpt(*shape_it), " of ",
           dt, " needs ", expected);
    t.data = data_begin + begin;
    t.nbytes = static_cast<size_t>(expected);
    auto [ins, _] = tensors_.emplace(name, std::move(t));
    spans.push_back({begin, end, &ins->first});
  }

  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  const Span* widest = nullptr;  // the non-empty span reaching furthest so far
  for (const Span& s : spans) {
    if (s.end == s.begin) continue;
    if (widest != nullptr && s.begin < widest->end)
      fail(path, ": tensors \"", *widest->name, "\" and \"", *s.name, "\" overlap in the data section");
    if (widest == nullptr || s.end > widest->end) widest = &s;
  }
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_safetensors_streamed(
      path, tensors,
      [&](size_t i, std::byte* buffer) {
        if (tensors[i].nbytes != 0) std::memcpy(buffer, tensors[i].data, tensors[i].nbytes);
      },
      metadata);
}

void write_safetensors_streamed(const std::string& path, const std::vector<TensorToWrite>& tensors,
                                const std::function<void(size_t, std::byte*)>& fill,
                                const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  size_t largest = 0;
  for (const auto& t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    if (numel * dtype_size(t.dtype) != t.nbytes)
      fail(path, ": tensor \"", t.name, "\" has ", t.nbytes, " bytes but its shape needs ",
           numel * dtype_size(t.dtype));
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
    largest = std::max(largest, t.nbytes);
  }
  std::string text = header.dump();
  // Spaces to a cache line: the data then starts on one (8 + text), and so does every tensor
  // whose predecessors' sizes are multiples of 64, which real shapes' are; glass reads
  // float tensors in place only from a line (model/decoder_model.cpp, data_alignment).
  while ((8 + text.size()) % 64 != 0) text += ' ';

  OutputFile out(path);
  uint64_t len = text.size();
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(len >> (8 * i));
  out.write(len_bytes, 8);
  out.write(text.data(), text.size());
  std::vector<std::byte> buffer(largest);
  for (size_t i = 0; i < tensors.size(); ++i) {
    fill(i, buffer.data());
    out.write(buffer.data(), tensors[i].nbytes);
  }
  out.commit();
}

}  // namespace glass
