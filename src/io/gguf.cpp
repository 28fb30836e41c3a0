#include "io/gguf.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "base/error.h"
#include "base/mapped_file.h"

namespace glass {

namespace {

constexpr uint64_t kNoTable = ~uint64_t{0};
constexpr uint64_t kHeaderBytes = 4 + 4 + 8 + 8;  // magic, version, tensor count, key count
// The least a key/value pair or a tensor info can take: a 1-byte key and a 1-byte value;
// a 1-byte name with one dimension. What "too many to be true" is measured against.
constexpr uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;
constexpr uint64_t kArrayHeaderBytes = 4 + 8;  // element type, count

bool is_gguf_type(uint32_t id) { return id <= static_cast<uint32_t>(GgufType::F64); }

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// `s` in double quotes with control characters, quotes and backslashes escaped, cut (at
// a UTF-8 boundary) after about `budget` bytes with its full length noted.
std::string quoted(std::string_view s, size_t budget) {
  std::string out = "\"";
  size_t n = std::min(s.size(), budget);
  if (n < s.size())
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  if (n < s.size()) out += str_cat("... (", s.size(), " bytes)");
  return out;
}

template <class F>
std::string shortest(F v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string dims_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += str_cat(i ? ", " : "", dims[i]);
  return s + "]";
}

std::string readable_type_names() {
  std::string s;
  for (const WeightTypeTraits& t : weight_types()) s += str_cat(s.empty() ? "" : ", ", t.name);
  return s;
}

}  // namespace

std::string gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::U8: return "u8";
    case GgufType::I8: return "i8";
    case GgufType::U16: return "u16";
    case GgufType::I16: return "i16";
    case GgufType::U32: return "u32";
    case GgufType::I32: return "i32";
    case GgufType::F32: return "f32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::U64: return "u64";
    case GgufType::I64: return "i64";
    case GgufType::F64: return "f64";
  }
  return str_cat("type ", static_cast<uint32_t>(t));
}

size_t gguf_type_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::String: case GgufType::Array: return 0;
  }
  return 0;
}

size_t gguf_tensor_data_alignment(WeightType type) { return type == WeightType::F32 ? 4 : 2; }

size_t gguf_tensor_bytes(WeightType type, std::span<const int64_t> ne, std::string_view what) {
  const WeightTypeTraits& tt = traits(type);
  if (ne.empty()) fail(what, ": no dimensions");
  int64_t numel = 1;
  for (int64_t d : ne) {
    if (d < 1) fail(what, ": dimensions ", dims_string(ne), " (ggml order): each must be at least 1");
    if (__builtin_mul_overflow(numel, d, &numel))
      fail(what, ": dimensions ", dims_string(ne), " hold more values than fit in 63 bits");
  }
  if (ne[0] % tt.block_values != 0)
    fail(what, ": rows of ", ne[0], " values (ne[0]) are not a whole number of ", tt.name, " blocks (", tt.block_values,
         " values each)");
  size_t bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel / tt.block_values), tt.block_bytes, &bytes))
    fail(what, ": ", tt.name, " dimensions ", dims_string(ne), " take more bytes than fit in 64 bits");
  return bytes;
}

// ---------------------------------------------------------------- values

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16: case GgufType::U32:
    case GgufType::I32: case GgufType::U64: case GgufType::I64: return true;
    default: return false;
  }
}

std::string GgufValue::where() const {
  std::string s = str_cat(*source_->path, ": metadata key \"", text_excerpt(source_->key), "\"");
  if (element_ >= 0) s += str_cat(", element ", element_);
  return s;
}

void GgufValue::wrong_type(const char* expected) const {
  fail(where(), " holds ", type_ == GgufType::Array ? "" : str_cat(gguf_type_name(type_), " "), excerpt(40), "; expected ",
       expected);
}

void GgufValue::does_not_fit(const char* target) const {
  fail(where(), " is ", excerpt(40), ", which does not fit in ", target, " as expected");
}

int64_t GgufValue::signed_value() const {
  switch (type_) {
    case GgufType::U8: return load<uint8_t>();
    case GgufType::I8: return load<int8_t>();
    case GgufType::U16: return load<uint16_t>();
    case GgufType::I16: return load<int16_t>();
    case GgufType::U32: return load<uint32_t>();
    case GgufType::I32: return load<int32_t>();
    case GgufType::I64: return load<int64_t>();
    default: wrong_type("an integer");
  }
}

uint64_t GgufValue::unsigned_value() const { return load<uint64_t>(); }

float GgufValue::as_f32() const {
  if (type_ == GgufType::F32) return load<float>();
  if (type_ == GgufType::F64) return static_cast<float>(load<double>());
  wrong_type("f32 or f64");
}

double GgufValue::as_f64() const {
  if (type_ == GgufType::F32) return load<float>();
  if (type_ == GgufType::F64) return load<double>();
  wrong_type("f32 or f64");
}

bool GgufValue::as_bool() const {
  if (type_ != GgufType::Bool) wrong_type("a bool");
  return load<uint8_t>() != 0;
}

std::string_view GgufValue::as_string() const {
  if (type_ != GgufType::String) wrong_type("a string");
  return {reinterpret_cast<const char*>(data_ + sizeof(uint64_t)), static_cast<size_t>(load<uint64_t>())};
}

GgufArray GgufValue::as_array() const {
  if (type_ != GgufType::Array) wrong_type("an array");
  return GgufArray(*this);
}

std::string GgufValue::excerpt(size_t max_bytes) const {
  switch (type_) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16: case GgufType::U32:
    case GgufType::I32: case GgufType::I64: return std::to_string(signed_value());
    case GgufType::U64: return std::to_string(unsigned_value());
    case GgufType::F32: return shortest(load<float>());
    case GgufType::F64: return shortest(load<double>());
    case GgufType::Bool: return load<uint8_t>() ? "true" : "false";
    case GgufType::String: return quoted(as_string(), max_bytes);
    case GgufType::Array: {
      const GgufArray array(*this);
      const GgufType et = array.element_type();
      std::string s = str_cat("[", array.size(), " ",
                              et == GgufType::String ? "strings" : et == GgufType::Array ? "arrays" : gguf_type_name(et), ":");
      const size_t budget = max_bytes > s.size() ? max_bytes - s.size() : 0;
      size_t used = 0;
      size_t shown = 0;
      for (; shown < array.size() && used < budget; ++shown) {
        std::string item = array.at(shown).excerpt(std::max<size_t>(budget - used, 8));
        used += item.size() + 2;
        s += str_cat(shown ? ", " : " ", item);
      }
      if (shown < array.size()) s += shown ? ", ..." : " ...";
      return s + "]";
    }
  }
  return "?";
}

// ---------------------------------------------------------------- arrays

GgufArray::GgufArray(const GgufValue& self)
    : self_(self),
      element_type_(static_cast<GgufType>(load<uint32_t>(self.data_))),
      count_(load<uint64_t>(self.data_ + 4)),
      first_(self.data_ + kArrayHeaderBytes) {}

const std::byte* GgufArray::element_data(size_t i) const {
  const size_t fixed = gguf_type_size(element_type_);
  if (fixed != 0) return first_ + i * fixed;
  const uint64_t* table = self_.arena_ + self_.table_;
  return first_ + table[element_type_ == GgufType::Array ? 2 * i : i];
}

GgufValue GgufArray::at(size_t i) const {
  if (i >= count_) fail(where(), ": element ", i, " is past the end of the array (", count_, " elements)");
  GgufValue v(element_type_, element_data(i), self_.source_, static_cast<int64_t>(i));
  if (element_type_ == GgufType::Array) {
    v.arena_ = self_.arena_;
    v.table_ = self_.arena_[self_.table_ + 2 * i + 1];
  }
  return v;
}

void GgufArray::wrong_element_type(const char* expected) const {
  fail(where(), " is an array of ", count_, " ", gguf_type_name(element_type_), " values; expected ", expected);
}

std::string_view GgufArray::string(size_t i) const {
  if (element_type_ != GgufType::String) wrong_element_type("strings");
  if (i >= count_) fail(where(), ": string ", i, " is past the end of the array (", count_, " strings)");
  const std::byte* p = element_data(i);
  return {reinterpret_cast<const char*>(p + sizeof(uint64_t)), static_cast<size_t>(load<uint64_t>(p))};
}

std::string_view GgufArray::StringIterator::operator*() const {
  return {reinterpret_cast<const char*>(next_ + sizeof(uint64_t)), static_cast<size_t>(length())};
}

GgufArray::Strings GgufArray::strings() const {
  if (element_type_ != GgufType::String) wrong_element_type("strings");
  if (count_ == 0) return {StringIterator(first_), StringIterator(first_)};
  const std::byte* last = element_data(count_ - 1);
  return {StringIterator(first_), StringIterator(last + sizeof(uint64_t) + load<uint64_t>(last))};
}

template <class T>
GgufArray::Numbers<T> GgufArray::numbers() const {
  constexpr GgufType want = gguf_type_of<T>();
  if (element_type_ != want) wrong_element_type(str_cat(gguf_type_name(want), " values").c_str());
  return Numbers<T>(first_, count_);
}

template <class T>
std::vector<T> GgufArray::to_vector() const {
  std::vector<T> out;
  if constexpr (std::is_floating_point_v<T>) {
    if (element_type_ != GgufType::F32 && element_type_ != GgufType::F64) wrong_element_type("f32 or f64 values");
    out.resize(count_);
    if (element_type_ == GgufType::F32)
      for (size_t i = 0; i < count_; ++i) out[i] = static_cast<T>(load<float>(first_ + 4 * i));
    else
      for (size_t i = 0; i < count_; ++i) out[i] = static_cast<T>(load<double>(first_ + 8 * i));
  } else {
    switch (element_type_) {
      case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16: case GgufType::U32:
      case GgufType::I32: case GgufType::U64: case GgufType::I64: break;
      default: wrong_element_type("integers");
    }
    out.resize(count_);
    for (size_t i = 0; i < count_; ++i) out[i] = at(i).as_integer<T>();
  }
  return out;
}

#define GLASS_GGUF_NUMBERS(T)                                          \
  template GgufArray::Numbers<T> GgufArray::numbers<T>() const; \
  template std::vector<T> GgufArray::to_vector<T>() const;
GLASS_GGUF_NUMBERS(uint8_t)
GLASS_GGUF_NUMBERS(int8_t)
GLASS_GGUF_NUMBERS(uint16_t)
GLASS_GGUF_NUMBERS(int16_t)
GLASS_GGUF_NUMBERS(uint32_t)
GLASS_GGUF_NUMBERS(int32_t)
GLASS_GGUF_NUMBERS(uint64_t)
GLASS_GGUF_NUMBERS(int64_t)
GLASS_GGUF_NUMBERS(float)
GLASS_GGUF_NUMBERS(double)
#undef GLASS_GGUF_NUMBERS

// ---------------------------------------------------------------- metadata

const GgufValue* GgufMetadata::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].value;
}

const GgufValue& GgufMetadata::at(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) fail(path_, ": metadata key \"", text_excerpt(key), "\" is missing");
  return *v;
}

GgufArray GgufMetadata::array(std::string_view key) const { return at(key).as_array(); }

std::optional<uint32_t> GgufMetadata::find_u32(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_u32()) : std::nullopt;
}
std::optional<int32_t> GgufMetadata::find_i32(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_i32()) : std::nullopt;
}
std::optional<uint64_t> GgufMetadata::find_u64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_u64()) : std::nullopt;
}
std::optional<int64_t> GgufMetadata::find_i64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_i64()) : std::nullopt;
}
std::optional<float> GgufMetadata::find_f32(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_f32()) : std::nullopt;
}
std::optional<double> GgufMetadata::find_f64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_f64()) : std::nullopt;
}
std::optional<bool> GgufMetadata::find_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_bool()) : std::nullopt;
}
std::optional<std::string_view> GgufMetadata::find_string(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_string()) : std::nullopt;
}
std::optional<GgufArray> GgufMetadata::find_array(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional(v->as_array()) : std::nullopt;
}

// ---------------------------------------------------------------- tensors

std::string GgufTensor::ne_string() const { return dims_string(ne); }
std::string GgufTensor::shape_string() const { return dims_string(shape); }

// ---------------------------------------------------------------- the parser

struct GgufFile::Contents {
  explicit Contents(const std::string& path) : file(path), metadata(path) {}
  MappedFile file;
  GgufMetadata metadata;
  uint32_t version = 0;
  uint32_t alignment = kGgufDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<GgufTensor> tensors;
  std::unordered_map<std::string_view, size_t> tensor_index;
};

// Reads the file front to back; every read is checked against the bytes left first, and
// every error says where in the file it is (the header, a key, a tensor info).
class GgufParser {
 public:
  GgufParser(const MappedFile& file, GgufMetadata& metadata)
      : path_(file.path()), base_(file.data()), size_(file.size()), metadata_(metadata) {}

  void parse(GgufFile::Contents& out) {
    read_header(out);
    read_metadata();
    out.alignment = read_alignment();
    read_tensor_infos(out);
    place_tensors(out);
  }

 private:
  enum class Part { Header, Key, Value, TensorInfo };

  std::string where() const {
    switch (part_) {
      case Part::Header: return "header";
      case Part::Key: return str_cat("metadata key ", index_ + 1, " of ", count_);
      case Part::Value: return str_cat("metadata key \"", text_excerpt(name_), "\"");
      case Part::TensorInfo:
        return name_.empty() ? str_cat("tensor info ", index_ + 1, " of ", count_)
                             : str_cat("tensor \"", text_excerpt(name_), "\" (tensor info ", index_ + 1, " of ", count_, ")");
    }
    return "";
  }

  uint64_t left() const { return size_ - pos_; }

  // The next `n` bytes, or an error naming what was being read.
  const std::byte* take(uint64_t n, const char* what) {
    if (n > left())
      fail(path_, ": truncated GGUF file: ", where(), ": ", what, " needs ", n, " bytes at byte ", pos_,
           " but the file ends at byte ", size_);
    const std::byte* p = base_ + pos_;
    pos_ += n;
    return p;
  }
  uint32_t u32(const char* what) { return load<uint32_t>(take(4, what)); }
  uint64_t u64(const char* what) { return load<uint64_t>(take(8, what)); }

  // A string's length and bytes; `max` bounds the length (names and keys).
  std::string_view string(const char* what, uint64_t max = ~uint64_t{0}) {
    const uint64_t n = u64(what);
    if (n > max) fail(path_, ": ", where(), ": ", what, " of ", n, " bytes is longer than the ", max, " allowed");
    if (n > left())
      fail(path_, ": ", where(), ": ", what, " of ", n, " bytes at byte ", pos_ - 8, " runs past the end of the file (",
           left(), " bytes left)");
    const auto* p = reinterpret_cast<const char*>(base_ + pos_);
    pos_ += n;
    return {p, static_cast<size_t>(n)};
  }

  void read_header(GgufFile::Contents& out) {
    part_ = Part::Header;
    if (size_ < 4) fail(path_, ": not a GGUF file: ", size_, " bytes, shorter than the 4-byte magic \"GGUF\"");
    if (std::memcmp(base_, "GGUF", 4) != 0)
      fail(path_, ": not a GGUF file: it starts with ",
           quoted(std::string_view(reinterpret_cast<const char*>(base_), 4), 4), ", expected the magic \"GGUF\"");
    pos_ = 4;
    const uint32_t version = u32("the version");
    if (version == 1)
      refuse(path_, ": GGUF version 1 (llama.cpp before August 2023) is not supported; glass reads versions 2 and 3 "
             "(convert the model again with a current llama.cpp)");
    if (version == 0x02000000u || version == 0x03000000u)
      refuse(path_, ": a big-endian GGUF file (version ", version >> 24, " byte-swapped); glass reads little-endian GGUF");
    if (version != 2 && version != 3)
      fail(path_, ": unsupported GGUF version ", version, "; glass reads versions 2 and 3");
    out.version = version;
    n_tensors_ = u64("the tensor count");
    n_kv_ = u64("the metadata key count");
    // Each key and each tensor info takes some bytes: a count the file cannot hold is a lie
    // (or a corrupt header), caught before anything is sized by it.
    const uint64_t body = size_ - kHeaderBytes;
    if (n_kv_ > body / kMinKeyValueBytes)
      fail(path_, ": GGUF header: ", n_kv_, " metadata keys is too many to be true: a file of ", size_,
           " bytes holds at most ", body / kMinKeyValueBytes, " (", kMinKeyValueBytes, " bytes each at least)");
    if (n_tensors_ > body / kMinTensorInfoBytes)
      fail(path_, ": GGUF header: ", n_tensors_, " tensors is too many to be true: a file of ", size_,
           " bytes holds at most ", body / kMinTensorInfoBytes, " tensor infos (", kMinTensorInfoBytes,
           " bytes each at least)");
    if (n_kv_ * kMinKeyValueBytes + n_tensors_ * kMinTensorInfoBytes > body)
      fail(path_, ": GGUF header: ", n_kv_, " metadata keys and ", n_tensors_, " tensors are too many to be true for a file of ",
           size_, " bytes");
  }

  GgufType value_type(const char* what) {
    const uint32_t id = u32(what);
    if (!is_gguf_type(id))
      fail(path_, ": ", where(), ": ", what, " ", id, " is not a GGUF value type (0 to 12)");
    return static_cast<GgufType>(id);
  }

  // Checks the value of `type` at pos_ and steps over it; for an array, returns where its
  // offset table starts in the arena (kNoTable when its elements have a fixed size).
  uint64_t value(GgufType type, int depth) {
    switch (type) {
      case GgufType::String: string("a string"); return kNoTable;
      case GgufType::Array: return array(depth + 1);
      case GgufType::Bool: check_bool(take(1, "a bool")); return kNoTable;
      default: take(gguf_type_size(type), "the value"); return kNoTable;
    }
  }

  void check_bool(const std::byte* p) {
    const auto b = static_cast<uint8_t>(*p);
    if (b > 1) fail(path_, ": ", where(), ": a bool at byte ", p - base_, " is ", +b, "; expected 0 or 1");
  }

  uint64_t array(int depth) {
    if (depth > kMaxGgufArrayDepth)
      fail(path_, ": ", where(), ": arrays nested more than ", kMaxGgufArrayDepth, " deep");
    const GgufType element = value_type("the array's element type");
    const uint64_t count = u64("the array's length");
    const uint64_t fixed = gguf_type_size(element);
    const uint64_t least = fixed != 0 ? fixed : element == GgufType::String ? 8 : kArrayHeaderBytes;
    if (count > left() / least)
      fail(path_, ": ", where(), ": an array of ", count, " ", gguf_type_name(element), " elements at byte ",
           pos_ - kArrayHeaderBytes, " runs past the end of the file (it needs at least ", least, " bytes each, ",
           left(), " bytes are left)");
    if (fixed != 0) {
      const std::byte* p = take(count * fixed, "the array");
      if (element == GgufType::Bool)
        for (uint64_t i = 0; i < count; ++i) check_bool(p + i);
      return kNoTable;
    }
    std::vector<uint64_t>& arena = metadata_.arena_;
    const uint64_t first = pos_;
    const uint64_t start = arena.size();
    if (element == GgufType::String) {
      arena.resize(start + count);
      for (uint64_t i = 0; i < count; ++i) {
        arena[start + i] = pos_ - first;
        string("a string in the array");
      }
    } else {
      arena.resize(start + 2 * count);
      for (uint64_t i = 0; i < count; ++i) {
        arena[start + 2 * i] = pos_ - first;
        const uint64_t inner = array(depth + 1);
        arena[start + 2 * i + 1] = inner;
      }
    }
    return start;
  }

  void read_metadata() {
    count_ = n_kv_;
    metadata_.sources_.reserve(n_kv_);
    metadata_.entries_.reserve(n_kv_);
    metadata_.index_.reserve(n_kv_);
    std::vector<uint64_t> tables;
    tables.reserve(n_kv_);
    for (uint64_t i = 0; i < n_kv_; ++i) {
      part_ = Part::Key;
      index_ = i;
      const std::string_view key = string("the key", kMaxGgufKeyBytes);
      if (key.empty()) fail(path_, ": ", where(), " is empty");
      part_ = Part::Value;
      name_ = key;
      const auto [_, inserted] = metadata_.index_.emplace(key, static_cast<uint32_t>(i));
      if (!inserted) fail(path_, ": ", where(), " appears twice (keys must be unique)");
      const GgufType type = value_type("the value type");
      const std::byte* data = base_ + pos_;
      tables.push_back(value(type, 0));
      metadata_.sources_.push_back({&metadata_.path_, key});
      metadata_.entries_.push_back({key, GgufValue(type, data, &metadata_.sources_.back(), -1)});
    }
    // The arena is complete: arrays can point at it now.
    for (size_t i = 0; i < metadata_.entries_.size(); ++i) {
      GgufValue& v = metadata_.entries_[i].value;
      v.arena_ = metadata_.arena_.data();
      v.table_ = tables[i];
    }
    name_ = {};
  }

  uint32_t read_alignment() {
    const GgufValue* v = metadata_.find("general.alignment");
    if (v == nullptr) return kGgufDefaultAlignment;
    const uint32_t a = v->as_u32();
    if (a == 0 || (a & (a - 1)) != 0 || a > kMaxGgufAlignment)
      fail(v->where(), " is ", a, "; expected a power of two from 1 to ", kMaxGgufAlignment);
    return a;
  }

  void read_tensor_infos(GgufFile::Contents& out) {
    count_ = n_tensors_;
    out.tensors.reserve(n_tensors_);
    out.tensor_index.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      part_ = Part::TensorInfo;
      index_ = i;
      name_ = {};
      const std::string_view name = string("the tensor name", kMaxGgufTensorNameBytes);
      if (name.empty()) fail(path_, ": ", where(), ": the tensor name is empty");
      name_ = name;
      if (!out.tensor_index.emplace(name, i).second)
        fail(path_, ": ", where(), ": a second tensor of that name (tensor names must be unique)");
      const uint32_t n_dims = u32("the number of dimensions");
      if (n_dims < 1 || n_dims > kMaxGgufDims)
        fail(path_, ": ", where(), ": ", n_dims, " dimensions; expected 1 to ", kMaxGgufDims);
      GgufTensor t;
      t.name = std::string(name);
      t.index = i;
      t.file = metadata_.path_;
      t.ne.resize(n_dims);
      for (uint32_t d = 0; d < n_dims; ++d) {
        t.ne[d] = load<int64_t>(take(8, "a dimension"));
        if (t.ne[d] < 1)
          fail(path_, ": ", where(), ": dimension ne[", d, "] is ", t.ne[d], "; expected at least 1");
      }
      t.ggml_type = u32("the type id");
      const WeightTypeTraits* tt = weight_type_of_ggml(t.ggml_type);
      if (tt == nullptr) {
        const std::string type_name = ggml_type_name(t.ggml_type);
        if (type_name.starts_with("type "))
          fail(path_, ": ", where(), ": unknown ggml type id ", t.ggml_type, " (glass reads ", readable_type_names(), ")");
        refuse(path_, ": ", where(), " has type ", type_name, " (ggml type ", t.ggml_type,
               "), which glass does not read (it reads ", readable_type_names(), ")");
      }
      t.type = tt->type;
      const std::string what = str_cat(path_, ": ", where());
      t.nbytes = gguf_tensor_bytes(t.type, t.ne, what);
      t.numel = 1;
      for (int64_t d : t.ne) t.numel *= d;  // checked by gguf_tensor_bytes
      t.shape.assign(t.ne.rbegin(), t.ne.rend());
      t.offset = u64("the data offset");
      out.tensors.push_back(std::move(t));
    }
    name_ = {};
  }

  void place_tensors(GgufFile::Contents& out) {
    const uint64_t align = out.alignment;
    const uint64_t infos_end = pos_;
    const uint64_t data_start = (infos_end + align - 1) / align * align;  // infos_end <= size_: no overflow
    out.data_offset = data_start;
    if (out.tensors.empty()) return;
    if (data_start > size_)
      fail(path_, ": truncated GGUF file: the data section would start at byte ", data_start,
           " (the tensor infos end at byte ", infos_end, ", aligned to ", align, ") but the file has ", size_, " bytes");
    const uint64_t data_size = size_ - data_start;
    for (GgufTensor& t : out.tensors) {
      const std::string tensor = str_cat("tensor \"", text_excerpt(t.name), "\" (", traits(t.type).name, " ",
                                         t.ne_string(), ", ", t.nbytes, " bytes)");
      if (t.offset % align != 0)
        fail(path_, ": ", tensor, ": data offset ", t.offset, " is not a multiple of the alignment ", align);
      if (t.offset > data_size || t.nbytes > data_size - t.offset)
        fail(path_, ": ", tensor, " at offset ", t.offset, " of the data section runs past the end of the file: ",
             "the data section has ", data_size, " bytes (from byte ", data_start, "); truncated tensor data or an offset that lies");
      const size_t need = gguf_tensor_data_alignment(t.type);
      if ((data_start + t.offset) % need != 0)
        refuse(path_, ": ", tensor, " starts at byte ", data_start + t.offset, " of the file, not a multiple of ", need,
               " as its ", traits(t.type).name, " data needs (the file's alignment is ", align,
               "); glass reads tensors aligned to their values");
      t.data = base_ + data_start + t.offset;
    }
    std::vector<const GgufTensor*> order;
    order.reserve(out.tensors.size());
    for (const GgufTensor& t : out.tensors) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < order.size(); ++i) {
      const GgufTensor& a = *order[i - 1];
      const GgufTensor& b = *order[i];
      if (b.offset < a.offset + a.nbytes)
        fail(path_, ": tensors \"", text_excerpt(a.name), "\" (bytes ", a.offset, " to ", a.offset + a.nbytes,
             " of the data section) and \"", text_excerpt(b.name), "\" (from byte ", b.offset, ") overlap");
    }
  }

  const std::string& path_;
  const std::byte* base_;
  uint64_t size_;
  GgufMetadata& metadata_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  Part part_ = Part::Header;
  uint64_t index_ = 0;
  uint64_t count_ = 0;
  std::string_view name_;
};

GgufFile::GgufFile(const std::string& path) : contents_(std::make_unique<Contents>(path)) {
  GgufParser(contents_->file, contents_->metadata).parse(*contents_);
}

GgufFile::~GgufFile() = default;
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;

const std::string& GgufFile::path() const { return contents_->file.path(); }
uint32_t GgufFile::version() const { return contents_->version; }
uint32_t GgufFile::alignment() const { return contents_->alignment; }
uint64_t GgufFile::data_offset() const { return contents_->data_offset; }
size_t GgufFile::file_size() const { return contents_->file.size(); }
std::span<const std::byte> GgufFile::bytes() const { return {contents_->file.data(), contents_->file.size()}; }
const MappedFile& GgufFile::mapping() const { return contents_->file; }
const GgufMetadata& GgufFile::metadata() const { return contents_->metadata; }
std::span<const GgufTensor> GgufFile::tensors() const { return contents_->tensors; }

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = contents_->tensor_index.find(name);
  return it == contents_->tensor_index.end() ? nullptr : &contents_->tensors[it->second];
}

// ---------------------------------------------------------------- split sets

std::optional<GgufSplitName> parse_gguf_split_name(std::string_view path) {
  // "<prefix>-NNNNN-of-MMMMM.gguf": the numbers are 5 digits in llama.cpp's names.
  constexpr std::string_view kTail = "-00000-of-00000.gguf";
  if (path.size() <= kTail.size()) return std::nullopt;
  const std::string_view tail = path.substr(path.size() - kTail.size());
  uint32_t number = 0, count = 0;
  for (size_t i = 0; i < kTail.size(); ++i) {
    const char want = kTail[i];
    const char c = tail[i];
    if (want == '0') {
      if (c < '0' || c > '9') return std::nullopt;
      uint32_t& n = i < 6 ? number : count;
      n = n * 10 + static_cast<uint32_t>(c - '0');
    } else if (c != want) {
      return std::nullopt;
    }
  }
  if (number < 1 || number > count) return std::nullopt;
  return GgufSplitName{std::string(path.substr(0, path.size() - kTail.size())), number, count};
}

std::string gguf_split_path(std::string_view prefix, uint32_t number, uint32_t count) {
  char tail[48];
  std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", number, count);
  return str_cat(prefix, tail);
}

GgufSet::GgufSet(const std::string& path) {
  GgufFile given(path);
  const std::optional<uint32_t> count = given.metadata().find_u32("split.count");
  const std::optional<uint32_t> number = given.metadata().find_u32("split.no");
  if (count == 0u) fail(path, ": split.count is 0; expected the number of parts of the split set (1 or more)");
  if (!count || *count == 1) {
    if (number.value_or(0) != 0)
      fail(path, ": split.no is ", *number, " but the file is not part of a split set (split.count ",
           count ? "is 1" : "is missing", ")");
    parts_.push_back(std::move(given));
  } else {
    if (!number) fail(path, ": split.count is ", *count, " but split.no (which part this is) is missing");
    if (*number >= *count) fail(path, ": split.no is ", *number, "; expected 0 to ", *count - 1, " (split.count is ", *count, ")");
    const std::optional<GgufSplitName> name = parse_gguf_split_name(path);
    if (!name || name->number != *number + 1 || name->count != *count)
      fail(path, ": part ", *number + 1, " of a split set of ", *count, " parts, but its name does not end in \"",
           gguf_split_path("", *number + 1, *count), "\", so the other parts cannot be found (gguf-split names them ",
           "<prefix>-NNNNN-of-MMMMM.gguf)");
    parts_.reserve(*count);
    for (uint32_t i = 0; i < *count; ++i) {
      if (i == *number) {
        parts_.push_back(std::move(given));
        continue;
      }
      const std::string part_path = gguf_split_path(name->prefix, i + 1, *count);
      struct stat st {};
      if (::stat(part_path.c_str(), &st) != 0)
        fail(path, ": part ", i + 1, " of the split set of ", *count, " parts is missing: ", part_path);
      GgufFile part(part_path);
      const std::optional<uint32_t> part_count = part.metadata().find_u32("split.count");
      const std::optional<uint32_t> part_number = part.metadata().find_u32("split.no");
      if (part_count != count)
        fail(part_path, ": split.count is ", part_count ? std::to_string(*part_count) : std::string("missing"), " but ",
             path, " says the set has ", *count, " parts");
      if (part_number != i)
        fail(part_path, ": split.no is ", part_number ? std::to_string(*part_number) : std::string("missing"),
             "; expected ", i, " (part ", i + 1, " of ", *count, ")");
      parts_.push_back(std::move(part));
    }
  }
  for (const GgufFile& part : parts_)
    for (const GgufTensor& t : part.tensors()) tensors_.push_back(&t);
  by_name_ = tensors_;
  // Stable: of two tensors of one name, the later part's is named as the repeat.
  std::stable_sort(by_name_.begin(), by_name_.end(),
                   [](const GgufTensor* a, const GgufTensor* b) { return a->name < b->name; });
  for (size_t i = 1; i < by_name_.size(); ++i)
    if (by_name_[i - 1]->name == by_name_[i]->name)
      fail(by_name_[i]->file, ": tensor \"", text_excerpt(by_name_[i]->name), "\" is also in ", by_name_[i - 1]->file,
           " (tensor names must be unique across the parts of a split set)");
  if (parts_.size() > 1) {
    for (const GgufFile& part : parts_) {
      const std::optional<int64_t> total = part.metadata().find_i64("split.tensors.count");
      if (total && *total != static_cast<int64_t>(tensors_.size()))
        fail(part.path(), ": split.tensors.count is ", *total, " but the ", parts_.size(), " parts hold ",
             tensors_.size(), " tensors");
    }
  }
}

const GgufTensor* GgufSet::find_tensor(std::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [](const GgufTensor* t, std::string_view n) { return t->name < n; });
  return it != by_name_.end() && (*it)->name == name ? *it : nullptr;
}

}  // namespace glass
