// GGUF: the file as GgufSet opens a model (what `-m FILE.gguf` does), then everything the
// reader accepted is touched and checked against the input bytes: every metadata value
// through the accessors of its type (strings and arrays are views into the map: they must
// lie inside it and hold the input's bytes), every tensor's extent, alignment, size and
// first and last byte, and one row of each tensor dequantized where its type has a codec.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fuzz_support.h"
#include "io/gguf.h"

namespace {

using namespace glass;

struct Checker {
  const uint8_t* input;
  size_t size;
  const std::byte* map;

  // A view the reader returned: inside the mapping, equal to the input at the same offset.
  void check_view(const void* p, size_t n, const GgufValue& v) const {
    const auto* b = static_cast<const std::byte*>(p);
    GLASS_FUZZ_CHECK(b >= map && static_cast<size_t>(b - map) <= size && n <= size - static_cast<size_t>(b - map),
                     v.where(), ": a view of ", n, " bytes outside the ", size, "-byte file");
    GLASS_FUZZ_CHECK(n == 0 || std::memcmp(b, input + (b - map), n) == 0, v.where(), ": view differs from the input");
  }

  template <class F>
  static void may_refuse(F&& f) {
    try {
      f();
    } catch (const Error&) {
    }
  }

  void touch(const GgufValue& v, int depth) const {
    GLASS_FUZZ_CHECK(depth <= kMaxGgufArrayDepth, v.where(), ": nested ", depth, " deep");
    const std::string excerpt = v.excerpt();
    // A bounded excerpt: escapes take at most 4 bytes a byte, nested arrays add a little.
    GLASS_FUZZ_CHECK(excerpt.size() < 4096, v.where(), ": excerpt of ", excerpt.size(), " bytes");
    switch (v.type()) {
      case GgufType::U64:
        (void)v.as_u64();
        may_refuse([&] { (void)v.as_i64(); });
        break;
      case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16: case GgufType::U32:
      case GgufType::I32: case GgufType::I64: {
        const int64_t i = v.as_i64();
        may_refuse([&] { GLASS_FUZZ_CHECK(static_cast<int64_t>(v.as_u32()) == i, v.where()); });
        may_refuse([&] { GLASS_FUZZ_CHECK(v.as_i32() == i, v.where()); });
        break;
      }
      case GgufType::F32: case GgufType::F64: {
        const double d = v.as_f64();
        const float f = v.as_f32();
        GLASS_FUZZ_CHECK(v.type() != GgufType::F32 || static_cast<double>(f) == d || d != d, v.where());
        break;
      }
      case GgufType::Bool: (void)v.as_bool(); break;
      case GgufType::String: {
        const std::string_view s = v.as_string();
        check_view(s.data(), s.size(), v);
        break;
      }
      case GgufType::Array: touch_array(v.as_array(), v, depth + 1); break;
    }
    may_refuse([&] { (void)v.as_string(); });
    may_refuse([&] { (void)v.as_u32(); });
  }

  void touch_array(const GgufArray& a, const GgufValue& v, int depth) const {
    const size_t n = a.size();
    GLASS_FUZZ_CHECK(n <= size, v.where(), ": ", n, " elements in a ", size, "-byte file");
    switch (a.element_type()) {
      case GgufType::String: {
        size_t i = 0;
        for (std::string_view s : a.strings()) {
          GLASS_FUZZ_CHECK(i < n, v.where(), ": more strings than ", n);
          GLASS_FUZZ_CHECK(a.string(i) == s && a.string(i).data() == s.data(), v.where(), ": string ", i);
          check_view(s.data(), s.size(), v);
          ++i;
        }
        GLASS_FUZZ_CHECK(i == n, v.where(), ": ", i, " strings iterated of ", n);
        break;
      }
      case GgufType::Array:
        for (size_t i = 0; i < n; ++i) touch(a.at(i), depth);
        break;
      case GgufType::F32: case GgufType::F64: {
        const std::vector<double> d = a.to_vector<double>();
        GLASS_FUZZ_CHECK(d.size() == n, v.where());
        if (a.element_type() == GgufType::F32) {
          const auto view = a.numbers<float>();
          size_t i = 0;
          for (float f : view) {
            GLASS_FUZZ_CHECK(static_cast<double>(f) == d[i] || f != f, v.where(), ": element ", i);
            ++i;
          }
        }
        break;
      }
      case GgufType::Bool:
        for (size_t i = 0; i < n; ++i) (void)a.at(i).as_bool();
        break;
      default: {
        may_refuse([&] {
          const std::vector<int64_t> w = a.to_vector<int64_t>();
          GLASS_FUZZ_CHECK(w.size() == n, v.where());
          if (a.element_type() == GgufType::I32) {
            const auto view = a.numbers<int32_t>();
            for (size_t i = 0; i < n; ++i) GLASS_FUZZ_CHECK(view[i] == w[i], v.where(), ": element ", i);
          }
        });
        may_refuse([&] { (void)a.to_vector<uint32_t>(); });
      }
    }
    if (n > 0) (void)a.at(n - 1).excerpt();
    may_refuse([&] { (void)a.at(n); });  // past the end: an error, never a read
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_path(".gguf");
  fuzz::write_scratch(path, data, size);
  fuzz::run_one([&] {
    const GgufSet set(path);
    GLASS_FUZZ_CHECK(set.parts().size() == 1, set.parts().size(), " parts from one scratch file");
    const GgufFile& file = set.parts().front();
    GLASS_FUZZ_CHECK(file.file_size() == size && file.bytes().size() == size, file.file_size());
    const Checker checker{data, size, file.bytes().data()};
    const GgufMetadata& m = file.metadata();
    for (const GgufKeyValue& kv : m.entries()) {
      GLASS_FUZZ_CHECK(!kv.key.empty() && kv.key.size() <= kMaxGgufKeyBytes, kv.key.size());
      GLASS_FUZZ_CHECK(m.find(kv.key) == &kv.value, "key ", text_excerpt(kv.key), " is found elsewhere");
      checker.check_view(kv.key.data(), kv.key.size(), kv.value);
      checker.touch(kv.value, 0);
    }
    const uint32_t align = file.alignment();
    GLASS_FUZZ_CHECK(align >= 1 && (align & (align - 1)) == 0 && align <= kMaxGgufAlignment, align);
    GLASS_FUZZ_CHECK(file.data_offset() % align == 0, file.data_offset());
    std::vector<const GgufTensor*> by_offset;
    for (const GgufTensor& t : file.tensors()) {
      GLASS_FUZZ_CHECK(set.find_tensor(t.name) == &t && file.find_tensor(t.name) == &t, t.name);
      GLASS_FUZZ_CHECK(!t.ne.empty() && t.ne.size() <= static_cast<size_t>(kMaxGgufDims), t.name);
      GLASS_FUZZ_CHECK(std::equal(t.ne.rbegin(), t.ne.rend(), t.shape.begin(), t.shape.end()), t.name);
      unsigned __int128 numel = 1;
      for (int64_t d : t.ne) {
        GLASS_FUZZ_CHECK(d >= 1, t.name, " ", t.ne_string());
        numel *= static_cast<uint64_t>(d);
      }
      GLASS_FUZZ_CHECK(numel == static_cast<unsigned __int128>(t.numel), t.name, " ", t.ne_string());
      GLASS_FUZZ_CHECK(row_fits(t.type, t.ne[0]), t.name);
      GLASS_FUZZ_CHECK(t.nbytes == gguf_tensor_bytes(t.type, t.ne, t.name), t.name);
      GLASS_FUZZ_CHECK(t.nbytes >= 1 && t.nbytes == t.row_bytes() * static_cast<size_t>(t.rows()), t.name);
      GLASS_FUZZ_CHECK(t.offset % align == 0, t.name, " at ", t.offset);
      GLASS_FUZZ_CHECK(t.data == file.bytes().data() + file.data_offset() + t.offset, t.name);
      GLASS_FUZZ_CHECK(file.data_offset() + t.offset + t.nbytes <= size, t.name, " ends past the file");
      volatile std::byte first = t.data[0], last = t.data[t.nbytes - 1];
      (void)first;
      (void)last;
      by_offset.push_back(&t);
      if (traits(t.type).dequantize != nullptr) {
        std::vector<float> row(static_cast<size_t>(t.ne[0]));
        dequantize_values(t.type, t.data, row.data(), t.ne[0]);
        dequantize_values(t.type, t.data + t.nbytes - t.row_bytes(), row.data(), t.ne[0]);
      }
    }
    std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i)
      GLASS_FUZZ_CHECK(by_offset[i - 1]->offset + by_offset[i - 1]->nbytes <= by_offset[i]->offset, by_offset[i]->name,
                       " overlaps ", by_offset[i - 1]->name);
  });
  return 0;
}
