// GGUF, llama.cpp's file format: a little-endian header ("GGUF", version, tensor and
// key counts), typed key/value metadata, tensor infos (name, dimensions innermost first,
// ggml type id, offset), then the tensor data, aligned to general.alignment.
//
// GgufFile maps one file and validates all of it before anything reads a value or a
// tensor: every length against the bytes left, every count against what the file could
// hold, every tensor's type, dimensions, alignment and extent against the data section.
// Nothing is copied: strings are views into the map, arrays are views with an offset
// table where their elements vary in size, tensor data are pointers into the map.
// GgufSet opens a model as one file or as the parts of a gguf-split set.
// Every error names the file and the key or tensor at fault (docs/formats.md#gguf).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mapped_file.h"
#include "quant/weight_type.h"

namespace glass {

// Value types of GGUF metadata, with the format's ids.
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
// "u8", "i32", "f32", "bool", "string", "array", ...; "type N" for an id outside the format.
std::string gguf_type_name(GgufType t);
// Bytes of one value of a fixed-size type; 0 for string and array.
size_t gguf_type_size(GgufType t);
// The GGUF type of a C++ number type (uint8_t ... int64_t, float, double).
template <class T>
constexpr GgufType gguf_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return GgufType::U8;
  else if constexpr (std::is_same_v<T, int8_t>) return GgufType::I8;
  else if constexpr (std::is_same_v<T, uint16_t>) return GgufType::U16;
  else if constexpr (std::is_same_v<T, int16_t>) return GgufType::I16;
  else if constexpr (std::is_same_v<T, uint32_t>) return GgufType::U32;
  else if constexpr (std::is_same_v<T, int32_t>) return GgufType::I32;
  else if constexpr (std::is_same_v<T, uint64_t>) return GgufType::U64;
  else if constexpr (std::is_same_v<T, int64_t>) return GgufType::I64;
  else if constexpr (std::is_same_v<T, float>) return GgufType::F32;
  else if constexpr (std::is_same_v<T, double>) return GgufType::F64;
  else static_assert(sizeof(T) == 0, "not a GGUF number type");
}

// Limits of the reader (docs/formats.md#gguf lists them with their reasons).
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kMaxGgufAlignment = uint32_t{1} << 24;  // 16 MiB
inline constexpr size_t kMaxGgufKeyBytes = 65535;                 // the GGUF specification's bound
inline constexpr size_t kMaxGgufTensorNameBytes = 63;             // ggml's GGML_MAX_NAME with its NUL
inline constexpr int kMaxGgufArrayDepth = 8;                      // an array of arrays ... 8 deep
inline constexpr int kMaxGgufDims = 4;                            // ggml's GGML_MAX_DIMS

class GgufArray;

// One metadata value: a view into the mapped file, valid while its GgufFile lives.
// Accessors that find another type (or an integer that does not fit) throw glass::Error
// naming the file, the key (and the element), the type found and the type expected.
class GgufValue {
 public:
  GgufType type() const { return type_; }
  bool is_integer() const;

  // Any integer type (u8 ... i64) whose value fits T.
  uint32_t as_u32() const { return as_integer<uint32_t>(); }
  int32_t as_i32() const { return as_integer<int32_t>(); }
  uint64_t as_u64() const { return as_integer<uint64_t>(); }
  int64_t as_i64() const { return as_integer<int64_t>(); }
  template <class T>
  T as_integer() const;
  // f32 or f64 (f64 rounded to the nearest float by as_f32).
  float as_f32() const;
  double as_f64() const;
  bool as_bool() const;
  std::string_view as_string() const;
  GgufArray as_array() const;

  // A printable excerpt for listings and messages: 42, 1e-06, true, "qwen2",
  // [151936 strings: "!", "\"", ...], each string cut to fit `max_bytes` in all.
  std::string excerpt(size_t max_bytes = 80) const;

  // "<file>: metadata key \"k\"" (", element i" for an array element): what messages name.
  std::string where() const;

 private:
  friend class GgufArray;
  friend class GgufMetadata;
  friend class GgufParser;
  struct Source {
    const std::string* path;
    std::string_view key;
  };
  GgufValue(GgufType type, const std::byte* data, const Source* source, int64_t element)
      : type_(type), data_(data), source_(source), element_(element) {}
  [[noreturn]] void wrong_type(const char* expected) const;
  [[noreturn]] void does_not_fit(const char* target) const;
  int64_t signed_value() const;
  uint64_t unsigned_value() const;
  template <class T>
  T load() const {
    T v;
    std::memcpy(&v, data_, sizeof v);
    return v;
  }

  GgufType type_;
  const std::byte* data_;  // the encoded value: the bytes of a scalar, a string's length field, an array's header
  const Source* source_;
  int64_t element_;  // the index in the enclosing array, -1 for a key's own value
  const uint64_t* arena_ = nullptr;  // the file's table of element offsets (arrays only)
  uint64_t table_ = 0;               // where this array's table starts in it
};

// A metadata array: element type, count and elements, read in place. Arrays of strings
// and of arrays keep one offset table per array (built by the parser, one allocation),
// so element i is found in constant time and no element is ever copied.
class GgufArray {
 public:
  GgufType element_type() const { return element_type_; }
  size_t size() const { return static_cast<size_t>(count_); }
  bool empty() const { return count_ == 0; }

  // Element i (any type); i past the end is a glass::Error naming the key.
  GgufValue at(size_t i) const;
  // Element i of an array of strings.
  std::string_view string(size_t i) const;

  // The strings of an array of strings, in order, as views (a range for `for`).
  class StringIterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;
    StringIterator() = default;
    std::string_view operator*() const;
    StringIterator& operator++() {
      next_ += sizeof(uint64_t) + length();
      return *this;
    }
    StringIterator operator++(int) {
      StringIterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const StringIterator& o) const { return next_ == o.next_; }

   private:
    friend class GgufArray;
    explicit StringIterator(const std::byte* at) : next_(at) {}
    uint64_t length() const {
      uint64_t n;
      std::memcpy(&n, next_, sizeof n);
      return n;
    }
    const std::byte* next_ = nullptr;
  };
  struct Strings {
    StringIterator first, last;
    StringIterator begin() const { return first; }
    StringIterator end() const { return last; }
  };
  // The array's strings; an array of another type is a glass::Error naming the key.
  Strings strings() const;

  // Numbers read in place, without a copy: the element type must be exactly T's GGUF type
  // (uint8_t, int8_t, ..., float, double). The file need not align them, so they are
  // loaded with memcpy rather than handed out as a span.
  template <class T>
  class Numbers {
   public:
    size_t size() const { return count_; }
    T operator[](size_t i) const {
      T v;
      std::memcpy(&v, data_ + i * sizeof(T), sizeof v);
      return v;
    }
    class Iterator {
     public:
      using iterator_category = std::forward_iterator_tag;
      using value_type = T;
      using difference_type = std::ptrdiff_t;
      using pointer = void;
      using reference = T;
      Iterator() = default;
      explicit Iterator(const std::byte* p) : p_(p) {}
      T operator*() const {
        T v;
        std::memcpy(&v, p_, sizeof v);
        return v;
      }
      Iterator& operator++() {
        p_ += sizeof(T);
        return *this;
      }
      Iterator operator++(int) {
        Iterator old = *this;
        p_ += sizeof(T);
        return old;
      }
      bool operator==(const Iterator& o) const { return p_ == o.p_; }

     private:
      const std::byte* p_ = nullptr;
    };
    Iterator begin() const { return Iterator(data_); }
    Iterator end() const { return Iterator(data_ + count_ * sizeof(T)); }

   private:
    friend class GgufArray;
    Numbers(const std::byte* data, size_t count) : data_(data), count_(count) {}
    const std::byte* data_;
    size_t count_;
  };
  template <class T>
  Numbers<T> numbers() const;

  // The whole array converted into one vector: integers of any integer element type that
  // fit T (a value that does not is an error naming the key and the element), or floats
  // from f32 or f64 elements.
  template <class T>
  std::vector<T> to_vector() const;

  std::string where() const { return self_.where(); }

 private:
  friend class GgufValue;
  explicit GgufArray(const GgufValue& self);
  const std::byte* element_data(size_t i) const;  // the encoded element i
  [[noreturn]] void wrong_element_type(const char* expected) const;

  GgufValue self_;  // the array as a value (its source, its table)
  GgufType element_type_;
  uint64_t count_;
  const std::byte* first_;  // the first element
};

struct GgufKeyValue {
  std::string_view key;  // into the mapped file
  GgufValue value;
};

// A file's metadata: the keys in file order, found by name in constant time. Typed
// accessors throw glass::Error naming the file and the key when it is missing or holds
// another type; find_* return nullopt for a missing key (and throw for a wrong type).
class GgufMetadata {
 public:
  GgufMetadata(const GgufMetadata&) = delete;
  GgufMetadata& operator=(const GgufMetadata&) = delete;

  const std::string& path() const { return path_; }
  // Every key and value in file order (for `glass inspect`: key, type, value.excerpt()).
  std::span<const GgufKeyValue> entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const GgufValue* find(std::string_view key) const;
  // The value of `key`; missing is an error naming the file and the key.
  const GgufValue& at(std::string_view key) const;

  uint32_t u32(std::string_view key) const { return at(key).as_u32(); }
  int32_t i32(std::string_view key) const { return at(key).as_i32(); }
  uint64_t u64(std::string_view key) const { return at(key).as_u64(); }
  int64_t i64(std::string_view key) const { return at(key).as_i64(); }
  float f32(std::string_view key) const { return at(key).as_f32(); }
  double f64(std::string_view key) const { return at(key).as_f64(); }
  bool boolean(std::string_view key) const { return at(key).as_bool(); }
  std::string_view string(std::string_view key) const { return at(key).as_string(); }
  GgufArray array(std::string_view key) const;

  std::optional<uint32_t> find_u32(std::string_view key) const;
  std::optional<int32_t> find_i32(std::string_view key) const;
  std::optional<uint64_t> find_u64(std::string_view key) const;
  std::optional<int64_t> find_i64(std::string_view key) const;
  std::optional<float> find_f32(std::string_view key) const;
  std::optional<double> find_f64(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::optional<std::string_view> find_string(std::string_view key) const;
  std::optional<GgufArray> find_array(std::string_view key) const;

 private:
  friend class GgufParser;
  friend class GgufFile;
  explicit GgufMetadata(std::string path) : path_(std::move(path)) {}

  std::string path_;
  std::vector<GgufValue::Source> sources_;  // per key, what its values name in messages
  std::vector<GgufKeyValue> entries_;
  std::vector<uint64_t> arena_;  // offset tables of the arrays of strings and of arrays
  std::unordered_map<std::string_view, uint32_t> index_;  // key -> entries_ index
};

// One tensor as a file stores it.
struct GgufTensor {
  std::string name;
  WeightType type = WeightType::F32;
  uint32_t ggml_type = 0;       // the id in the file
  std::vector<int64_t> ne;      // ggml order: ne[0] is the row length (contiguous), each >= 1
  std::vector<int64_t> shape;   // PyTorch order: ne reversed ([rows, cols] for a matrix)
  int64_t numel = 0;
  uint64_t offset = 0;          // in the data section
  const std::byte* data = nullptr;  // into the mapped file
  size_t nbytes = 0;
  std::string_view file;        // the file it lives in, for messages
  size_t index = 0;             // its position among the file's tensor infos

  int64_t row_length() const { return ne[0]; }
  int64_t rows() const { return numel / ne[0]; }
  size_t row_bytes() const { return weight_row_bytes(type, ne[0]); }
  std::string ne_string() const;     // "[256, 768]"
  std::string shape_string() const;  // "[768, 256]"
};

class GgufFile {
 public:
  // Maps and validates `path`. Throws glass::Error naming the file and the key or tensor;
  // glass::Unsupported for a well-formed file glass does not read (GGUF v1, big-endian,
  // a tensor type glass does not store, such as the IQ types).
  explicit GgufFile(const std::string& path);
  ~GgufFile();
  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;

  const std::string& path() const;
  uint32_t version() const;
  uint32_t alignment() const;
  uint64_t data_offset() const;  // where the data section starts in the file
  size_t file_size() const;
  // The whole mapped file (strings, arrays and tensor data are views into it).
  std::span<const std::byte> bytes() const;
  const MappedFile& mapping() const;
  const GgufMetadata& metadata() const;
  // In file order.
  std::span<const GgufTensor> tensors() const;
  const GgufTensor* find_tensor(std::string_view name) const;

 private:
  friend class GgufParser;
  struct Contents;
  std::unique_ptr<Contents> contents_;  // on the heap: views keep pointing at it when the file moves
};

// A split file name as llama.cpp's gguf-split writes it: "<prefix>-00002-of-00003.gguf".
struct GgufSplitName {
  std::string prefix;
  uint32_t number = 0;  // 1-based, as in the name
  uint32_t count = 0;
};
std::optional<GgufSplitName> parse_gguf_split_name(std::string_view path);
// "<prefix>-NNNNN-of-MMMMM.gguf" for the 1-based part `number`.
std::string gguf_split_path(std::string_view prefix, uint32_t number, uint32_t count);

// A model in GGUF: one file, or all parts of a split set (split.count > 1 in the file;
// any part's path opens the whole set). Parts are found by their names, as llama.cpp
// finds them; each must be present, say the same split.count and its own split.no, and
// together hold split.tensors.count tensors with names unique across the parts. The
// metadata is the first part's (gguf-split writes the full metadata there only).
class GgufSet {
 public:
  explicit GgufSet(const std::string& path);

  // The first part's metadata: the model's description.
  const GgufMetadata& metadata() const { return parts_.front().metadata(); }
  const std::vector<GgufFile>& parts() const { return parts_; }
  // Every tensor of every part, part after part, each in file order.
  const std::vector<const GgufTensor*>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;
  // The first part's path, as messages name the model.
  const std::string& path() const { return parts_.front().path(); }

 private:
  std::vector<GgufFile> parts_;
  std::vector<const GgufTensor*> tensors_;
  std::vector<const GgufTensor*> by_name_;  // sorted by name
};

// The alignment a tensor's data needs in memory: 4 for f32 values, 2 for the rest (f16 and
// bf16 values, the fp16 scales of the quantized blocks). The reader refuses a tensor placed
// otherwise, which only a file with general.alignment 1 or 2 can do.
size_t gguf_tensor_data_alignment(WeightType type);

// Bytes of a tensor of `type` with dimensions `ne` (ggml order): a glass::Error naming
// `what` when ne[0] is not a multiple of the type's block or the size overflows.
size_t gguf_tensor_bytes(WeightType type, std::span<const int64_t> ne, std::string_view what);

// ---- template definitions ----

template <class T>
T GgufValue::as_integer() const {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  constexpr const char* target = std::is_signed_v<T> ? (sizeof(T) == 1 ? "i8" : sizeof(T) == 2 ? "i16" : sizeof(T) == 4 ? "i32" : "i64")
                                                     : (sizeof(T) == 1 ? "u8" : sizeof(T) == 2 ? "u16" : sizeof(T) == 4 ? "u32" : "u64");
  if (!is_integer()) wrong_type(target);
  if (type_ == GgufType::U64) {
    const uint64_t v = unsigned_value();
    if (!std::in_range<T>(v)) does_not_fit(target);
    return static_cast<T>(v);
  }
  const int64_t v = signed_value();
  if (!std::in_range<T>(v)) does_not_fit(target);
  return static_cast<T>(v);
}

}  // namespace glass
