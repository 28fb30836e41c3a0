// GGUF: the writer and the reader against each other (every value type, tensor types and
// alignments, split sets), and the reader against hand-made bad files, each error checked
// for the file, the key or tensor and what was expected.
#include "io/gguf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>

#include "base/error.h"
#include "io/gguf_writer.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::TempDir;
using test::thrown_error;
using V = GgufWriteValue;

// ---------------------------------------------------------------- a raw byte builder

// GGUF bytes put together field by field, to make files the writer refuses to make.
struct Raw {
  std::string b;
  Raw& u8(uint8_t v) { return put(&v, 1); }
  Raw& u32(uint32_t v) { return put(&v, 4); }
  Raw& u64(uint64_t v) { return put(&v, 8); }
  Raw& i64(int64_t v) { return put(&v, 8); }
  Raw& f32(float v) { return put(&v, 4); }
  Raw& str(std::string_view s) {
    u64(s.size());
    b += s;
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b = "GGUF";
    u32(version);
    u64(n_tensors);
    return u64(n_kv);
  }
  Raw& kv_u32(std::string_view key, uint32_t v) {
    str(key);
    u32(static_cast<uint32_t>(GgufType::U32));
    return u32(v);
  }
  Raw& kv_string(std::string_view key, std::string_view v) {
    str(key);
    u32(static_cast<uint32_t>(GgufType::String));
    return str(v);
  }
  Raw& info(std::string_view name, std::vector<int64_t> ne, uint32_t ggml_type, uint64_t offset) {
    str(name);
    u32(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) i64(d);
    u32(ggml_type);
    return u64(offset);
  }
  Raw& pad(size_t alignment = 32) {
    while (b.size() % alignment != 0) b += '\0';
    return *this;
  }
  Raw& zeros(size_t n) {
    b.append(n, '\0');
    return *this;
  }
  Raw& put(const void* p, size_t n) {
    b.append(static_cast<const char*>(p), n);
    return *this;
  }
};

std::string write_bytes(const TempDir& tmp, const std::string& name, const std::string& bytes) {
  const std::string path = tmp.file(name);
  test::write_string(path, bytes);
  return path;
}

std::string open_error(const std::string& path) {
  return thrown_error([&] { GgufFile f(path); });
}

// The message names the file and contains each of `parts`.
void expect_message(const std::string& message, const std::string& path, std::initializer_list<std::string> parts) {
  EXPECT_NE(message.find(path), std::string::npos) << "no file name in: " << message;
  for (const std::string& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "no \"" << p << "\" in: " << message;
}

// A file with one f32 tensor "w" of 8 values after `kvs` raw key/values.
std::string one_tensor_file(uint64_t n_kv, const std::string& kvs) {
  Raw r;
  r.header(1, n_kv);
  r.b += kvs;
  r.info("w", {8}, 0, 0).pad().zeros(32);
  return r.b;
}

// ---------------------------------------------------------------- round trips

TEST(GgufRoundTrip, EveryValueType) {
  TempDir tmp;
  const std::vector<int32_t> i32s = {0, -1, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  const std::vector<float> f32s = {0.5f, -2.0f, std::numeric_limits<float>::infinity(), 1e-30f};
  const std::vector<uint8_t> u8s = {0, 255};
  const std::vector<int8_t> i8s = {-128, 127};
  const std::vector<uint16_t> u16s = {0, 65535};
  const std::vector<int16_t> i16s = {-32768, 32767};
  const std::vector<uint32_t> u32s = {0, 4294967295u};
  const std::vector<uint64_t> u64s = {0, std::numeric_limits<uint64_t>::max()};
  const std::vector<int64_t> i64s = {std::numeric_limits<int64_t>::min(), 7};
  const std::vector<double> f64s = {1e300, -0.25};
  const std::vector<std::string> tokens = {"!", "", std::string("a\0b", 3), "\xc4\xa0the", "<|im_end|>"};
  const GgufMetadataToWrite meta = {
      {"t.u8", V::u8(200)},
      {"t.i8", V::i8(-100)},
      {"t.u16", V::u16(60000)},
      {"t.i16", V::i16(-30000)},
      {"t.u32", V::u32(4000000000u)},
      {"t.i32", V::i32(-2000000000)},
      {"t.u64", V::u64(18000000000000000000ull)},
      {"t.i64", V::i64(-9000000000000000000ll)},
      {"t.f32", V::f32(1e-6f)},
      {"t.f64", V::f64(1e6)},
      {"t.true", V::boolean(true)},
      {"t.false", V::boolean(false)},
      {"t.string", V::string("qwen2")},
      {"t.empty_string", V::string("")},
      {"t.a.u8", V::numbers(u8s)},
      {"t.a.i8", V::numbers(i8s)},
      {"t.a.u16", V::numbers(u16s)},
      {"t.a.i16", V::numbers(i16s)},
      {"t.a.u32", V::numbers(u32s)},
      {"t.a.i32", V::numbers(i32s)},
      {"t.a.u64", V::numbers(u64s)},
      {"t.a.i64", V::numbers(i64s)},
      {"t.a.f32", V::numbers(f32s)},
      {"t.a.f64", V::numbers(f64s)},
      {"t.a.bool", V::array(GgufType::Bool, {V::boolean(true), V::boolean(false), V::boolean(true)})},
      {"t.a.strings", V::strings(tokens)},
      {"t.a.empty", V::numbers(std::vector<int32_t>{})},
      {"t.a.nested", V::array(GgufType::Array, {V::strings(std::vector<std::string>{"x", "yz"}), V::numbers(i32s),
                                                V::array(GgufType::Array, {V::numbers(f64s)}),
                                                V::strings(std::vector<std::string>{})})},
  };
  const std::string path = tmp.file("values.gguf");
  write_gguf(path, meta, {});
  const GgufFile f(path);
  const GgufMetadata& m = f.metadata();
  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(m.size(), meta.size());
  for (size_t i = 0; i < meta.size(); ++i) {
    EXPECT_EQ(m.entries()[i].key, meta[i].first);  // file order
    EXPECT_EQ(m.entries()[i].value.type(), meta[i].second.type()) << meta[i].first;
  }
  EXPECT_EQ(m.at("t.u8").as_u32(), 200u);
  EXPECT_EQ(m.at("t.i8").as_i32(), -100);
  EXPECT_EQ(m.at("t.u16").as_u32(), 60000u);
  EXPECT_EQ(m.at("t.i16").as_i32(), -30000);
  EXPECT_EQ(m.u32("t.u32"), 4000000000u);
  EXPECT_EQ(m.i32("t.i32"), -2000000000);
  EXPECT_EQ(m.u64("t.u64"), 18000000000000000000ull);
  EXPECT_EQ(m.i64("t.i64"), -9000000000000000000ll);
  EXPECT_EQ(m.f32("t.f32"), 1e-6f);
  EXPECT_EQ(m.f64("t.f32"), static_cast<double>(1e-6f));  // f32 widened exactly
  EXPECT_EQ(m.f64("t.f64"), 1e6);
  EXPECT_EQ(m.f32("t.f64"), 1e6f);
  EXPECT_TRUE(m.boolean("t.true"));
  EXPECT_FALSE(m.boolean("t.false"));
  EXPECT_EQ(m.string("t.string"), "qwen2");
  EXPECT_EQ(m.string("t.empty_string"), "");
  EXPECT_EQ(m.array("t.a.u8").to_vector<uint8_t>(), u8s);
  EXPECT_EQ(m.array("t.a.i8").to_vector<int8_t>(), i8s);
  EXPECT_EQ(m.array("t.a.u16").to_vector<uint16_t>(), u16s);
  EXPECT_EQ(m.array("t.a.i16").to_vector<int16_t>(), i16s);
  EXPECT_EQ(m.array("t.a.u32").to_vector<uint32_t>(), u32s);
  EXPECT_EQ(m.array("t.a.i32").to_vector<int32_t>(), i32s);
  EXPECT_EQ(m.array("t.a.u64").to_vector<uint64_t>(), u64s);
  EXPECT_EQ(m.array("t.a.i64").to_vector<int64_t>(), i64s);
  EXPECT_EQ(m.array("t.a.f32").to_vector<float>(), f32s);
  EXPECT_EQ(m.array("t.a.f64").to_vector<double>(), f64s);
  EXPECT_EQ(m.array("t.a.i8").to_vector<int64_t>(), (std::vector<int64_t>{-128, 127}));  // widened
  // In-place views.
  const auto i32_view = m.array("t.a.i32").numbers<int32_t>();
  ASSERT_EQ(i32_view.size(), i32s.size());
  EXPECT_EQ(std::vector<int32_t>(i32_view.begin(), i32_view.end()), i32s);
  EXPECT_EQ(i32_view[2], std::numeric_limits<int32_t>::min());
  const auto f32_view = m.array("t.a.f32").numbers<float>();
  EXPECT_EQ(std::vector<float>(f32_view.begin(), f32_view.end()), f32s);
  const GgufArray bools = m.array("t.a.bool");
  ASSERT_EQ(bools.size(), 3u);
  EXPECT_TRUE(bools.at(0).as_bool());
  EXPECT_FALSE(bools.at(1).as_bool());
  const GgufArray strings = m.array("t.a.strings");
  ASSERT_EQ(strings.size(), tokens.size());
  EXPECT_EQ(strings.element_type(), GgufType::String);
  std::vector<std::string> read;
  for (std::string_view s : strings.strings()) read.emplace_back(s);
  EXPECT_EQ(read, tokens);
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(strings.string(i), tokens[i]);
  EXPECT_EQ(strings.at(3).as_string(), "\xc4\xa0the");
  EXPECT_TRUE(m.array("t.a.empty").empty());
  EXPECT_EQ(m.array("t.a.empty").element_type(), GgufType::I32);
  const GgufArray nested = m.array("t.a.nested");
  ASSERT_EQ(nested.size(), 4u);
  EXPECT_EQ(nested.element_type(), GgufType::Array);
  EXPECT_EQ(nested.at(0).as_array().string(1), "yz");
  EXPECT_EQ(nested.at(1).as_array().to_vector<int32_t>(), i32s);
  EXPECT_EQ(nested.at(2).as_array().at(0).as_array().to_vector<double>(), f64s);
  EXPECT_TRUE(nested.at(3).as_array().empty());
  const auto empty_strings = nested.at(3).as_array().strings();
  EXPECT_EQ(empty_strings.begin(), empty_strings.end());
  EXPECT_TRUE(f.tensors().empty());
}

TEST(GgufRoundTrip, FindReturnsNulloptForMissingKeysOnly) {
  TempDir tmp;
  const std::string path = tmp.file("m.gguf");
  write_gguf(path, {{"a", V::u32(7)}, {"s", V::string("x")}, {"f", V::f64(0.5)}, {"b", V::boolean(true)}}, {});
  const GgufFile f(path);
  EXPECT_EQ(f.metadata().find_u32("a"), 7u);
  EXPECT_EQ(f.metadata().find_i64("a"), 7);
  EXPECT_EQ(f.metadata().find_u32("missing"), std::nullopt);
  EXPECT_EQ(f.metadata().find_string("s"), "x");
  EXPECT_EQ(f.metadata().find_string("missing"), std::nullopt);
  EXPECT_EQ(f.metadata().find_f32("f"), 0.5f);
  EXPECT_EQ(f.metadata().find_bool("b"), true);
  EXPECT_FALSE(f.metadata().find_array("missing").has_value());
  EXPECT_TRUE(f.metadata().contains("a"));
  EXPECT_FALSE(f.metadata().contains("missing"));
  // Present with another type: an error, not nullopt.
  const std::string e = thrown_error([&] { (void)f.metadata().find_u32("s"); });
  expect_message(e, path, {"\"s\"", "string", "u32"});
}

struct TensorCase {
  const char* name;
  WeightType type;
  std::vector<int64_t> ne;
};

std::vector<std::byte> pattern_bytes(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

TEST(GgufRoundTrip, TensorsOfSeveralTypesAtEveryAlignment) {
  const std::vector<TensorCase> cases = {
      {"blk.0.attn_norm.weight", WeightType::F32, {3}},
      {"f16.weight", WeightType::F16, {5, 2}},
      {"bf16.weight", WeightType::BF16, {7, 3, 2}},
      {"q8_0.weight", WeightType::Q8_0, {64, 3}},
      {"q4_0.weight", WeightType::Q4_0, {32, 2, 2, 2}},
      {"q4_1.weight", WeightType::Q4_1, {32, 1}},
      {"q6_K.weight", WeightType::Q6_K, {256, 2}},
      {"q4_K.weight", WeightType::Q4_K, {512, 1}},
  };
  for (uint32_t alignment : {4u, 8u, 32u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    TempDir tmp;
    std::vector<std::vector<std::byte>> data;
    std::vector<GgufTensorToWrite> tensors;
    for (size_t i = 0; i < cases.size(); ++i) {
      data.push_back(pattern_bytes(gguf_tensor_bytes(cases[i].type, cases[i].ne, "test"), static_cast<uint32_t>(i)));
      tensors.push_back({cases[i].name, cases[i].type, cases[i].ne, data.back().data()});
    }
    const std::string path = tmp.file("t.gguf");
    write_gguf(path, {{"general.architecture", V::string("qwen2")}}, tensors, alignment);
    const GgufFile f(path);
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.metadata().contains("general.alignment"), alignment != 32);
    if (alignment != 32) {
      EXPECT_EQ(f.metadata().u32("general.alignment"), alignment);
    }
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.tensors().size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      const GgufTensor& t = f.tensors()[i];
      SCOPED_TRACE(t.name);
      EXPECT_EQ(t.name, cases[i].name);
      EXPECT_EQ(t.index, i);
      EXPECT_EQ(t.type, cases[i].type);
      EXPECT_EQ(t.ggml_type, traits(cases[i].type).ggml_type);
      EXPECT_EQ(t.ne, cases[i].ne);
      EXPECT_EQ(t.shape, std::vector<int64_t>(cases[i].ne.rbegin(), cases[i].ne.rend()));
      EXPECT_EQ(t.numel, std::accumulate(cases[i].ne.begin(), cases[i].ne.end(), int64_t{1}, std::multiplies<>()));
      EXPECT_EQ(t.row_length(), cases[i].ne[0]);
      EXPECT_EQ(t.rows(), t.numel / cases[i].ne[0]);
      EXPECT_EQ(t.row_bytes() * static_cast<size_t>(t.rows()), t.nbytes);
      ASSERT_EQ(t.nbytes, data[i].size());
      EXPECT_EQ(std::memcmp(t.data, data[i].data(), t.nbytes), 0);
      EXPECT_EQ(t.offset % alignment, 0u);
      EXPECT_EQ(t.file, path);
      EXPECT_EQ(f.find_tensor(cases[i].name), &t);
    }
    EXPECT_EQ(f.find_tensor("absent"), nullptr);
    EXPECT_EQ(f.file_size() % alignment, 0u);  // every tensor padded, the last one too
  }
}

// general.alignment 1 or 2 is legal GGUF, but the values of a tensor must be aligned in
// memory for the codecs and kernels that read them: such a tensor is refused, naming it.
TEST(GgufReader, RefusesTensorsMisalignedForTheirValues) {
  TempDir tmp;
  for (uint32_t alignment : {1u, 2u}) {
    SCOPED_TRACE(alignment);
    Raw r;  // the data section starts at byte 123 (alignment 1: "h" is odd) or 124 (2: "w" is not 4-aligned)
    r.header(2, 1).kv_u32("general.alignment", alignment).info("h", {1}, 1, 0).info("w", {2}, 0, 2);
    ASSERT_EQ(r.b.size(), 123u);
    r.pad(alignment).zeros(16);
    const std::string path = write_bytes(tmp, "a.gguf", r.b);
    EXPECT_THROW(GgufFile{path}, Unsupported);
    expect_message(open_error(path), path,
                   {"tensor \"", " as its ", "data needs (the file's alignment is " + std::to_string(alignment) + ")"});
  }
  // The same alignment with every tensor where its values need it: fine.
  Raw r;
  r.header(2, 1).kv_u32("general.alignment", 1).info("h", {1}, 1, 1).info("w", {2}, 0, 5).zeros(16);
  const std::string path = write_bytes(tmp, "ok.gguf", r.b);
  const GgufFile f(path);
  EXPECT_EQ(f.data_offset(), 123u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.find_tensor("w")->data) % 4, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.find_tensor("h")->data) % 2, 0u);
}

TEST(GgufRoundTrip, AVersion2FileReadsAsVersion3) {
  TempDir tmp;
  const std::string path = tmp.file("v2.gguf");
  const float w[4] = {1, 2, 3, 4};
  write_gguf(path, {{"k", V::string("v")}}, {{"w", WeightType::F32, {4}, w}});
  std::string bytes = test::read_string(path);
  bytes[4] = 2;  // v2 and v3 share the layout (v3 added big-endian files)
  test::write_string(path, bytes);
  const GgufFile f(path);
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.metadata().string("k"), "v");
  EXPECT_EQ(std::memcmp(f.tensors()[0].data, w, sizeof w), 0);
}

TEST(GgufRoundTrip, ViewsSurviveMovingTheFile) {
  TempDir tmp;
  const std::string path = tmp.file("m.gguf");
  const float w[2] = {5, 6};
  write_gguf(path, {{"tokens", V::strings(std::vector<std::string>{"a", "bc"})}}, {{"w", WeightType::F32, {2}, w}});
  GgufFile f(path);
  const GgufArray tokens = f.metadata().array("tokens");
  const GgufTensor* t = f.find_tensor("w");
  std::vector<GgufFile> files;
  files.push_back(std::move(f));
  files.emplace_back(path);  // the vector reallocates: the first file moves again
  EXPECT_EQ(tokens.string(1), "bc");
  EXPECT_EQ(files[0].find_tensor("w"), t);
  EXPECT_EQ(files[0].metadata().array("tokens").string(0), "a");
  const std::string e = thrown_error([&] { (void)files[0].metadata().u32("tokens"); });
  expect_message(e, path, {"\"tokens\""});
}

TEST(GgufRoundTrip, StreamedWriterFillsOneTensorAtATime) {
  TempDir tmp;
  const std::string path = tmp.file("s.gguf");
  const std::vector<GgufTensorToWrite> tensors = {{"a", WeightType::F32, {3}}, {"b", WeightType::Q8_0, {32, 4}}};
  std::vector<size_t> asked;
  write_gguf_streamed(path, {}, tensors, [&](size_t i, std::span<std::byte> out) {
    asked.push_back(i);
    EXPECT_EQ(out.size(), gguf_tensor_bytes(tensors[i].type, tensors[i].ne, "t"));
    std::memset(out.data(), static_cast<int>(0x10 + i), out.size());
  });
  EXPECT_EQ(asked, (std::vector<size_t>{0, 1}));
  const GgufFile f(path);
  EXPECT_EQ(f.tensors()[1].nbytes, 4u * 34u);
  EXPECT_EQ(f.tensors()[1].data[0], std::byte{0x11});
  EXPECT_EQ(f.tensors()[1].data[4 * 34 - 1], std::byte{0x11});
  EXPECT_EQ(f.tensors()[0].data[11], std::byte{0x10});
}

TEST(GgufRoundTrip, AFailingFillLeavesNoFileAndKeepsTheOldOne) {
  TempDir tmp;
  const std::string path = tmp.file("s.gguf");
  const std::vector<GgufTensorToWrite> tensors = {{"a", WeightType::F32, {3}}, {"b", WeightType::F32, {3}}};
  auto failing = [](size_t i, std::span<std::byte> out) {
    if (i == 1) fail("out of disk in the test");
    std::memset(out.data(), 0, out.size());
  };
  EXPECT_THROW(write_gguf_streamed(path, {}, tensors, failing), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
  test::write_string(path, "old contents");
  EXPECT_THROW(write_gguf_streamed(path, {}, tensors, failing), Error);
  EXPECT_EQ(test::read_string(path), "old contents");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path()), std::filesystem::directory_iterator()), 1);
}

TEST(GgufWriter, RefusesWhatItCannotWrite) {
  TempDir tmp;
  const std::string path = tmp.file("w.gguf");
  const float w[64] = {};
  struct Case {
    const char* name;
    GgufMetadataToWrite meta;
    std::vector<GgufTensorToWrite> tensors;
    uint32_t alignment;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"duplicate key", {{"a", V::u8(1)}, {"a", V::u8(2)}}, {}, 32, "\"a\" appears twice"},
      {"empty key", {{"", V::u8(1)}}, {}, 32, "key is empty"},
      {"duplicate tensor", {}, {{"w", WeightType::F32, {2}, w}, {"w", WeightType::F32, {2}, w}}, 32, "\"w\" appears twice"},
      {"long name", {}, {{std::string(64, 'n'), WeightType::F32, {2}, w}}, 32, "longer than 63 bytes"},
      {"no dims", {}, {{"w", WeightType::F32, {}, w}}, 32, "0 dimensions; expected 1 to 4"},
      {"five dims", {}, {{"w", WeightType::F32, {1, 1, 1, 1, 1}, w}}, 32, "5 dimensions"},
      {"zero dim", {}, {{"w", WeightType::F32, {2, 0}, w}}, 32, "each must be at least 1"},
      {"partial block", {}, {{"w", WeightType::Q4_0, {31}, w}}, 32, "rows of 31 values (ne[0]) are not a whole number of q4_0 blocks (32"},
      {"alignment 3", {}, {}, 3, "alignment 3; expected a power of two"},
      {"alignment 0", {}, {}, 0, "alignment 0; expected a power of two"},
      {"alignment key differs", {{"general.alignment", V::u32(64)}}, {}, 32, "\"general.alignment\" must be the u32 32"},
      {"alignment key type", {{"general.alignment", V::u64(32)}}, {}, 32, "\"general.alignment\" must be the u32 32"},
  };
  for (const Case& c : cases) {
    const std::string e = thrown_error([&] { write_gguf(path, c.meta, c.tensors, c.alignment); });
    expect_message(e, path, {c.expect});
    EXPECT_FALSE(std::filesystem::exists(path)) << c.name;
  }
  const std::string e = thrown_error([] { (void)V::array(GgufType::I32, {V::i32(1), V::u32(2)}); });
  EXPECT_NE(e.find("element 1 is a u32"), std::string::npos) << e;
  // A general.alignment equal to the alignment is kept (once).
  write_gguf(path, {{"general.alignment", V::u32(64)}}, {{"w", WeightType::F32, {2}, w}}, 64);
  EXPECT_EQ(GgufFile(path).metadata().size(), 1u);
}

// ---------------------------------------------------------------- accessors

TEST(GgufMetadata, AccessorsNameTheFileTheKeyAndTheTypes) {
  TempDir tmp;
  const std::string path = tmp.file("acc.gguf");
  write_gguf(path,
             {{"name", V::string("x")},
              {"neg", V::i32(-1)},
              {"big", V::u64(1ull << 40)},
              {"ints", V::numbers(std::vector<int32_t>{1, -2})},
              {"tokens", V::strings(std::vector<std::string>{"a"})}},
             {});
  const GgufFile f(path);
  const GgufMetadata& m = f.metadata();
  expect_message(thrown_error([&] { (void)m.u32("qwen2.block_count"); }), path,
                 {"metadata key \"qwen2.block_count\" is missing"});
  expect_message(thrown_error([&] { (void)m.u32("name"); }), path, {"metadata key \"name\" holds string \"x\"; expected u32"});
  expect_message(thrown_error([&] { (void)m.f32("name"); }), path, {"\"name\"", "expected f32 or f64"});
  expect_message(thrown_error([&] { (void)m.boolean("neg"); }), path, {"\"neg\" holds i32 -1; expected a bool"});
  expect_message(thrown_error([&] { (void)m.string("neg"); }), path, {"\"neg\"", "expected a string"});
  expect_message(thrown_error([&] { (void)m.array("neg"); }), path, {"\"neg\"", "expected an array"});
  expect_message(thrown_error([&] { (void)m.u32("neg"); }), path, {"\"neg\" is -1, which does not fit in u32"});
  expect_message(thrown_error([&] { (void)m.u32("big"); }), path, {"\"big\" is 1099511627776, which does not fit in u32"});
  EXPECT_EQ(m.u64("big"), 1ull << 40);
  EXPECT_EQ(m.i32("neg"), -1);
  expect_message(thrown_error([&] { (void)m.array("ints").to_vector<uint32_t>(); }), path,
                 {"\"ints\", element 1 is -2, which does not fit in u32"});
  expect_message(thrown_error([&] { (void)m.array("ints").strings(); }), path,
                 {"\"ints\" is an array of 2 i32 values; expected strings"});
  expect_message(thrown_error([&] { (void)m.array("ints").numbers<float>(); }), path, {"\"ints\"", "expected f32 values"});
  expect_message(thrown_error([&] { (void)m.array("ints").to_vector<float>(); }), path, {"\"ints\"", "expected f32 or f64"});
  expect_message(thrown_error([&] { (void)m.array("tokens").to_vector<int32_t>(); }), path, {"\"tokens\"", "expected integers"});
  expect_message(thrown_error([&] { (void)m.array("tokens").at(1); }), path, {"\"tokens\": element 1 is past the end", "(1 elements)"});
  expect_message(thrown_error([&] { (void)m.array("tokens").string(5); }), path, {"\"tokens\": string 5 is past the end"});
  expect_message(thrown_error([&] { (void)m.array("tokens").at(0).as_u32(); }), path, {"\"tokens\", element 0 holds string \"a\"; expected u32"});
}

TEST(GgufMetadata, ExcerptsArePrintableAndShort) {
  TempDir tmp;
  const std::string path = tmp.file("ex.gguf");
  std::vector<std::string> many(1000, "tok");
  write_gguf(path,
             {{"i", V::i32(-5)},
              {"u", V::u64(18446744073709551615ull)},
              {"f", V::f32(1e-6f)},
              {"d", V::f64(0.1)},
              {"b", V::boolean(true)},
              {"s", V::string("line\n\"q\"\x01")},
              {"long", V::string(std::string(500, 'x'))},
              {"tokens", V::strings(many)},
              {"ints", V::numbers(std::vector<int32_t>{1, 2, 3})},
              {"nested", V::array(GgufType::Array, {V::numbers(std::vector<uint8_t>{1}), V::strings(std::vector<std::string>{})})},
              {"empty", V::numbers(std::vector<float>{})}},
             {});
  const GgufFile f(path);
  const GgufMetadata& m = f.metadata();
  EXPECT_EQ(m.at("i").excerpt(), "-5");
  EXPECT_EQ(m.at("u").excerpt(), "18446744073709551615");
  EXPECT_EQ(m.at("f").excerpt(), "1e-06");
  EXPECT_EQ(m.at("d").excerpt(), "0.1");
  EXPECT_EQ(m.at("b").excerpt(), "true");
  EXPECT_EQ(m.at("s").excerpt(), "\"line\\n\\\"q\\\"\\x01\"");
  EXPECT_EQ(m.at("long").excerpt(20), "\"" + std::string(20, 'x') + "\"... (500 bytes)");
  EXPECT_EQ(m.at("ints").excerpt(), "[3 i32: 1, 2, 3]");
  EXPECT_EQ(m.at("nested").excerpt(), "[2 arrays: [1 u8: 1], [0 strings:]]");
  EXPECT_EQ(m.at("empty").excerpt(), "[0 f32:]");
  const std::string tokens = m.at("tokens").excerpt(60);
  EXPECT_TRUE(tokens.starts_with("[1000 strings: \"tok\", \"tok\"")) << tokens;
  EXPECT_TRUE(tokens.ends_with(", ...]")) << tokens;
  EXPECT_LT(tokens.size(), 90u) << tokens;
}

// ---------------------------------------------------------------- bad files

TEST(GgufReader, RejectsAWrongMagic) {
  TempDir tmp;
  const std::string path = write_bytes(tmp, "m.gguf", "GGML" + std::string(40, '\0'));
  expect_message(open_error(path), path, {"not a GGUF file", "starts with \"GGML\"", "expected the magic \"GGUF\""});
  const std::string empty = write_bytes(tmp, "e.gguf", "");
  expect_message(open_error(empty), empty, {"0 bytes, shorter than the 4-byte magic"});
  // safetensors is not GGUF
  const std::string st = write_bytes(tmp, "s.gguf", std::string("\x10\0\0\0\0\0\0\0{}", 10));
  expect_message(open_error(st), st, {"not a GGUF file", "\\x10"});
}

TEST(GgufReader, RefusesVersionsItDoesNotRead) {
  TempDir tmp;
  Raw v1;
  v1.header(0, 0, 1);
  const std::string p1 = write_bytes(tmp, "v1.gguf", v1.b);
  EXPECT_THROW(GgufFile{p1}, Unsupported);
  expect_message(open_error(p1), p1, {"GGUF version 1", "glass reads versions 2 and 3"});
  Raw v4;
  v4.header(0, 0, 4);
  const std::string p4 = write_bytes(tmp, "v4.gguf", v4.b);
  expect_message(open_error(p4), p4, {"unsupported GGUF version 4; glass reads versions 2 and 3"});
  Raw big;
  big.header(0, 0, 0x03000000u);
  const std::string pb = write_bytes(tmp, "be.gguf", big.b);
  EXPECT_THROW(GgufFile{pb}, Unsupported);
  expect_message(open_error(pb), pb, {"big-endian"});
}

TEST(GgufReader, ATruncatedFileIsACleanErrorAtEveryCut) {
  TempDir tmp;
  const std::string full = tmp.file("full.gguf");
  const float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<uint8_t> q(34 * 2, 0x3c);
  write_gguf(full,
             {{"general.architecture", V::string("qwen2")},
              {"n", V::u32(7)},
              {"x", V::f64(1.5)},
              {"b", V::boolean(true)},
              {"tokens", V::strings(std::vector<std::string>{"a", "bc", ""})},
              {"ids", V::numbers(std::vector<int32_t>{1, 2})},
              {"nested", V::array(GgufType::Array, {V::strings(std::vector<std::string>{"x"})})}},
             {{"w", WeightType::F32, {8}, w}, {"q", WeightType::Q8_0, {32, 2}, q.data()}});
  const std::string bytes = test::read_string(full);
  const GgufFile whole(full);
  const GgufTensor& last = whole.tensors().back();
  const size_t data_end = static_cast<size_t>(whole.data_offset() + last.offset + last.nbytes);
  const std::string path = tmp.file("cut.gguf");
  for (size_t cut = 0; cut < data_end; ++cut) {
    test::write_string(path, bytes.substr(0, cut));
    const std::string e = open_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << "cut at " << cut << ": " << e;
    if (cut >= 4 && cut < whole.data_offset()) {
      EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("past the end") != std::string::npos ||
                  e.find("too many to be true") != std::string::npos)
          << "cut at " << cut << ": " << e;
    }
  }
  // Cut inside the last tensor's padding: nothing is missing.
  test::write_string(path, bytes.substr(0, data_end));
  EXPECT_EQ(GgufFile(path).tensors().size(), 2u);
}

TEST(GgufReader, RejectsTruncatedTensorData) {
  TempDir tmp;
  Raw r;
  r.header(2, 0).info("a", {8}, 0, 0).info("blk.0.ffn_up.weight", {32, 4}, 8, 32).pad().zeros(32 + 100);
  const std::string path = write_bytes(tmp, "t.gguf", r.b);
  expect_message(open_error(path), path,
                 {"tensor \"blk.0.ffn_up.weight\" (q8_0 [32, 4], 136 bytes) at offset 32", "runs past the end of the file",
                  "the data section has 132 bytes"});
}

TEST(GgufReader, RejectsLengthsPastTheEnd) {
  TempDir tmp;
  struct Case {
    const char* name;
    std::string bytes;
    std::vector<std::string> expect;
  };
  Raw key;
  key.header(0, 1).u64(1000).b += "abc";
  Raw value;
  value.header(0, 1).str("general.name").u32(8).u64(1ull << 40).b += "xyz";
  Raw array;
  array.header(0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(5000000).str("a");
  Raw element;
  element.header(0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(2).str("a").u64(999).b += "bb";
  Raw ints;
  ints.header(0, 1).str("ids").u32(9).u32(5).u64(1000).u32(1);
  Raw name;
  name.header(1, 0).u64(60).b += "w";
  const std::vector<Case> cases = {
      {"key", key.b, {"metadata key 1 of 1", "the key of 1000 bytes", "runs past the end of the file"}},
      {"string", value.b, {"metadata key \"general.name\"", "a string of 1099511627776 bytes", "runs past the end"}},
      {"array", array.b,
       {"metadata key \"tokenizer.ggml.tokens\"", "an array of 5000000 string elements", "runs past the end of the file"}},
      {"element", element.b, {"metadata key \"tokenizer.ggml.tokens\"", "a string in the array of 999 bytes", "runs past the end"}},
      {"ints", ints.b, {"metadata key \"ids\"", "an array of 1000 i32 elements", "runs past the end"}},
      {"tensor name", name.b, {"tensor info 1 of 1", "the tensor name of 60 bytes", "runs past the end of the file"}},
  };
  for (const Case& c : cases) {
    const std::string path = write_bytes(tmp, std::string(c.name) + ".gguf", c.bytes + std::string(40, '\0'));
    const std::string e = open_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << c.name << ": " << e;
    for (const std::string& want : c.expect) EXPECT_NE(e.find(want), std::string::npos) << c.name << ": " << e;
  }
}

TEST(GgufReader, RejectsCountsTooLargeToBeTrue) {
  TempDir tmp;
  Raw kv;
  kv.header(0, 1ull << 60).zeros(200);
  const std::string pk = write_bytes(tmp, "kv.gguf", kv.b);
  expect_message(open_error(pk), pk, {"1152921504606846976 metadata keys is too many to be true", "a file of 224 bytes"});
  Raw tensors;
  tensors.header(~uint64_t{0}, 0).zeros(200);
  const std::string pt = write_bytes(tmp, "t.gguf", tensors.b);
  expect_message(open_error(pt), pt, {"18446744073709551615 tensors is too many to be true"});
  Raw both;  // each alone fits, together not
  both.header(6, 14).zeros(200);
  const std::string pb = write_bytes(tmp, "b.gguf", both.b);
  expect_message(open_error(pb), pb, {"14 metadata keys and 6 tensors are too many to be true"});
}

TEST(GgufReader, RejectsBadTensorPlacement) {
  TempDir tmp;
  struct Case {
    const char* name;
    Raw raw;
    std::vector<std::string> expect;
  };
  std::vector<Case> cases;
  {
    Raw r;
    r.header(1, 0).info("output.weight", {8}, 0, 1ull << 62).pad().zeros(32);
    cases.push_back({"past the end", r, {"tensor \"output.weight\"", "at offset 4611686018427387904", "runs past the end"}});
  }
  {
    Raw r;
    r.header(2, 0).info("a", {16}, 0, 0).info("b", {8}, 0, 32).pad().zeros(96);
    cases.push_back({"overlap", r, {"tensors \"a\" (bytes 0 to 64 of the data section) and \"b\" (from byte 32) overlap"}});
  }
  {
    Raw r;  // listed out of order, overlapping
    r.header(2, 0).info("late", {8}, 0, 64).info("early", {24}, 0, 0).pad().zeros(128);
    cases.push_back({"overlap out of order", r, {"tensors \"early\"", "and \"late\" (from byte 64) overlap"}});
  }
  {
    Raw r;
    r.header(1, 0).info("w", {8}, 0, 4).pad().zeros(64);
    cases.push_back({"misaligned", r, {"tensor \"w\"", "data offset 4 is not a multiple of the alignment 32"}});
  }
  {
    Raw r;
    r.header(1, 1).kv_u32("general.alignment", 64).info("w", {8}, 0, 32).pad(64).zeros(128);
    cases.push_back({"misaligned 64", r, {"tensor \"w\"", "data offset 32 is not a multiple of the alignment 64"}});
  }
  {
    Raw r;  // the infos end at byte 90; the file does not reach the next 4096 boundary
    r.header(1, 1).kv_u32("general.alignment", 4096).info("w", {8}, 0, 0);
    cases.push_back({"data section start", r, {"the data section would start at byte 4096", "aligned to 4096"}});
  }
  for (const Case& c : cases) {
    const std::string path = write_bytes(tmp, std::string(c.name) + ".gguf", c.raw.b);
    const std::string e = open_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << c.name << ": " << e;
    for (const std::string& want : c.expect) EXPECT_NE(e.find(want), std::string::npos) << c.name << ": " << e;
  }
  // Adjacent, out of order, with a gap: fine.
  Raw ok;
  ok.header(2, 0).info("b", {8}, 0, 64).info("a", {8}, 0, 0).pad().zeros(96);
  const std::string path = write_bytes(tmp, "ok.gguf", ok.b);
  const GgufFile f(path);
  EXPECT_EQ(f.tensors()[0].offset, 64u);
  EXPECT_EQ(f.tensors()[1].data, f.tensors()[0].data - 64);
}

TEST(GgufReader, RejectsBadTensorInfos) {
  TempDir tmp;
  struct Case {
    const char* name;
    Raw raw;
    std::vector<std::string> expect;
  };
  std::vector<Case> cases;
  auto one = [](const std::string& name, std::vector<int64_t> ne, uint32_t type) {
    Raw r;
    r.header(1, 0).info(name, std::move(ne), type, 0).pad().zeros(64);
    return r;
  };
  cases.push_back({"unknown type", one("blk.3.attn_q.weight", {8}, 99), {"tensor \"blk.3.attn_q.weight\"", "unknown ggml type id 99", "glass reads f32, f16"}});
  cases.push_back({"removed type", one("w", {32}, 4), {"tensor \"w\"", "unknown ggml type id 4"}});
  cases.push_back({"product overflow", one("big", {1ll << 32, 1ll << 32}, 0), {"tensor \"big\"", "dimensions [4294967296, 4294967296] hold more values than fit in 63 bits"}});
  cases.push_back({"bytes overflow", one("big", {1ll << 62}, 0), {"tensor \"big\"", "f32 dimensions [4611686018427387904] take more bytes than fit in 64 bits"}});
  cases.push_back({"zero dim", one("z", {8, 0}, 0), {"tensor \"z\"", "dimension ne[1] is 0; expected at least 1"}});
  cases.push_back({"negative dim", one("n", {-8}, 0), {"tensor \"n\"", "dimension ne[0] is -8; expected at least 1"}});
  cases.push_back({"partial block", one("q", {48, 2}, 8), {"tensor \"q\"", "rows of 48 values (ne[0]) are not a whole number of q8_0 blocks (32 values each)"}});
  cases.push_back({"k-quant block", one("k", {128}, 12), {"tensor \"k\"", "rows of 128 values", "q4_K blocks (256 values each)"}});
  {
    Raw r;
    r.header(1, 0).str("w").u32(5);
    for (int i = 0; i < 5; ++i) r.i64(1);
    r.u32(0).u64(0).pad().zeros(32);
    cases.push_back({"five dims", r, {"tensor \"w\"", "5 dimensions; expected 1 to 4"}});
  }
  {
    Raw r;
    r.header(1, 0).str("w").u32(0).u32(0).u64(0).pad().zeros(64);
    cases.push_back({"no dims", r, {"tensor \"w\"", "0 dimensions; expected 1 to 4"}});
  }
  {
    Raw r;
    r.header(2, 0).info("w", {8}, 0, 0).info("w", {8}, 0, 32).pad().zeros(64);
    cases.push_back({"duplicate name", r, {"tensor \"w\" (tensor info 2 of 2)", "a second tensor of that name"}});
  }
  cases.push_back({"empty name", one("", {8}, 0), {"tensor info 1 of 1", "the tensor name is empty"}});
  cases.push_back({"long name", one(std::string(64, 'x'), {8}, 0), {"tensor info 1 of 1", "the tensor name of 64 bytes is longer than the 63 allowed"}});
  for (const Case& c : cases) {
    const std::string path = write_bytes(tmp, std::string(c.name) + ".gguf", c.raw.b);
    const std::string e = open_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << c.name << ": " << e;
    for (const std::string& want : c.expect) EXPECT_NE(e.find(want), std::string::npos) << c.name << ": " << e;
  }
  // A 63-byte name is fine; IQ types are refused as unsupported, naming tensor and type.
  const std::string ok = write_bytes(tmp, "ok.gguf", one(std::string(63, 'x'), {8}, 0).b);
  EXPECT_EQ(GgufFile(ok).tensors()[0].name.size(), 63u);
  const std::string iq = write_bytes(tmp, "iq.gguf", one("blk.0.ffn_down.weight", {256}, 16).b);
  EXPECT_THROW(GgufFile{iq}, Unsupported);
  expect_message(open_error(iq), iq, {"tensor \"blk.0.ffn_down.weight\"", "has type iq2_xxs (ggml type 16), which glass does not read"});
}

TEST(GgufReader, RejectsBadMetadata) {
  TempDir tmp;
  struct Case {
    const char* name;
    std::string bytes;
    std::vector<std::string> expect;
  };
  std::vector<Case> cases;
  {
    Raw r;
    r.kv_u32("general.alignment", 32).kv_u32("general.alignment", 64);
    cases.push_back({"duplicate key", one_tensor_file(2, r.b), {"metadata key \"general.alignment\" appears twice"}});
  }
  {
    Raw r;
    r.str("").u32(4).u32(1);
    cases.push_back({"empty key", one_tensor_file(1, r.b), {"metadata key 1 of 1 is empty"}});
  }
  {
    Raw r;
    r.str(std::string(65536, 'k')).u32(4).u32(1);
    cases.push_back({"long key", one_tensor_file(1, r.b), {"metadata key 1 of 1", "the key of 65536 bytes is longer than the 65535 allowed"}});
  }
  {
    Raw r;
    r.str("k").u32(13).u32(1);
    cases.push_back({"value type", one_tensor_file(1, r.b), {"metadata key \"k\"", "the value type 13 is not a GGUF value type"}});
  }
  {
    Raw r;
    r.str("k").u32(9).u32(77).u64(0);
    cases.push_back({"element type", one_tensor_file(1, r.b), {"metadata key \"k\"", "the array's element type 77 is not a GGUF value type"}});
  }
  {
    Raw r;
    r.str("tokenizer.ggml.add_bos_token").u32(7).u8(2);
    cases.push_back({"bool", one_tensor_file(1, r.b), {"metadata key \"tokenizer.ggml.add_bos_token\"", "a bool at byte", "is 2; expected 0 or 1"}});
  }
  {
    Raw r;
    r.str("flags").u32(9).u32(7).u64(3).u8(1).u8(0).u8(5);
    cases.push_back({"bool array", one_tensor_file(1, r.b), {"metadata key \"flags\"", "is 5; expected 0 or 1"}});
  }
  for (uint32_t a : {0u, 3u, 48u, 1u << 25}) {
    Raw r;
    r.kv_u32("general.alignment", a);
    cases.push_back({"alignment", one_tensor_file(1, r.b),
                     {str_cat("metadata key \"general.alignment\" is ", a, "; expected a power of two from 1 to 16777216")}});
  }
  {
    Raw r;
    r.kv_string("general.alignment", "32");
    cases.push_back({"alignment type", one_tensor_file(1, r.b), {"metadata key \"general.alignment\" holds string \"32\"; expected u32"}});
  }
  int n = 0;
  for (const Case& c : cases) {
    const std::string path = write_bytes(tmp, str_cat("bad", n++, ".gguf"), c.bytes);
    const std::string e = open_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << c.name << ": " << e;
    for (const std::string& want : c.expect) EXPECT_NE(e.find(want), std::string::npos) << c.name << ": " << e;
  }
}

// An array `depth` levels deep: [[[...[1]...]]].
std::string nested_array(int depth) {
  Raw r;
  r.str("deep").u32(9);
  for (int i = 1; i < depth; ++i) r.u32(9).u64(1);
  r.u32(5).u64(1).u32(1);
  return r.b;
}

TEST(GgufReader, BoundsArrayNesting) {
  TempDir tmp;
  const std::string ok = write_bytes(tmp, "ok.gguf", one_tensor_file(1, nested_array(kMaxGgufArrayDepth)));
  const GgufFile f(ok);
  GgufValue v = f.metadata().at("deep");
  for (int i = 0; i < kMaxGgufArrayDepth; ++i) v = v.as_array().at(0);
  EXPECT_EQ(v.as_i32(), 1);
  const std::string deep = write_bytes(tmp, "deep.gguf", one_tensor_file(1, nested_array(kMaxGgufArrayDepth + 1)));
  expect_message(open_error(deep), deep, {"metadata key \"deep\"", "arrays nested more than 8 deep"});
  // Far deeper than the stack would allow unbounded: still the same clean error.
  const std::string deeper = write_bytes(tmp, "deeper.gguf", one_tensor_file(1, nested_array(100000)));
  expect_message(open_error(deeper), deeper, {"arrays nested more than 8 deep"});
}

TEST(GgufReader, AFileWithoutTensorsNeedsNoDataSection) {
  TempDir tmp;
  Raw r;
  r.header(0, 1).kv_string("general.architecture", "qwen2");
  const std::string path = write_bytes(tmp, "meta.gguf", r.b);
  const GgufFile f(path);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.metadata().string("general.architecture"), "qwen2");
}

TEST(GgufReader, OpensALargeVocabularyInMilliseconds) {
  TempDir tmp;
  const std::string path = tmp.file("vocab.gguf");
  std::vector<std::string> tokens(152064), merges(151387);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = str_cat("tok", i);
  for (size_t i = 0; i < merges.size(); ++i) merges[i] = str_cat("a", i, " b", i);
  std::vector<int32_t> types(tokens.size(), 1);
  write_gguf(path, {{"tokenizer.ggml.tokens", V::strings(tokens)}, {"tokenizer.ggml.merges", V::strings(merges)},
                    {"tokenizer.ggml.token_type", V::numbers(types)}}, {});
  const auto start = std::chrono::steady_clock::now();
  const GgufFile f(path);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const GgufArray t = f.metadata().array("tokenizer.ggml.tokens");
  ASSERT_EQ(t.size(), tokens.size());
  EXPECT_EQ(t.string(151999), "tok151999");
  size_t i = 0;
  for (std::string_view s : t.strings()) ASSERT_EQ(s, tokens[i++]);
  EXPECT_EQ(f.metadata().array("tokenizer.ggml.merges").string(7), "a7 b7");
  // Generous for a shared 2-core machine under sanitizers; the parse itself takes a few ms.
  EXPECT_LT(ms, 500.0);
  std::printf("opened a %zu-token vocabulary in %.2f ms\n", tokens.size(), ms);
}

// ---------------------------------------------------------------- split sets

struct SplitPart {
  std::vector<std::string> tensors;
  int64_t count_override = -1;  // split.count written, when not the real one
  int64_t number_override = -1;
};

// Writes `parts` as a split set named <dir>/model-NNNNN-of-MMMMM.gguf as gguf-split does:
// full metadata in the first part, split.* in each.
std::vector<std::string> write_split(const TempDir& tmp, const std::vector<SplitPart>& parts, int64_t total_override = -1) {
  const uint16_t n = static_cast<uint16_t>(parts.size());
  int32_t total = 0;
  for (const SplitPart& p : parts) total += static_cast<int32_t>(p.tensors.size());
  if (total_override >= 0) total = static_cast<int32_t>(total_override);
  std::vector<std::string> paths;
  static const float w[4] = {1, 2, 3, 4};
  for (uint16_t i = 0; i < n; ++i) {
    GgufMetadataToWrite meta;
    if (i == 0) meta.push_back({"general.architecture", V::string("qwen2")});
    meta.push_back({"split.no", V::u16(static_cast<uint16_t>(parts[i].number_override >= 0 ? parts[i].number_override : i))});
    meta.push_back({"split.count", V::u16(static_cast<uint16_t>(parts[i].count_override >= 0 ? parts[i].count_override : n))});
    meta.push_back({"split.tensors.count", V::i32(total)});
    std::vector<GgufTensorToWrite> tensors;
    for (const std::string& name : parts[i].tensors) tensors.push_back({name, WeightType::F32, {4}, w});
    paths.push_back(gguf_split_path(tmp.file("model"), i + 1, n));
    write_gguf(paths.back(), meta, tensors);
  }
  return paths;
}

TEST(GgufSplit, NamesFollowGgufSplit) {
  EXPECT_EQ(gguf_split_path("/m/qwen", 2, 3), "/m/qwen-00002-of-00003.gguf");
  const auto name = parse_gguf_split_name("/m/qwen-00002-of-00003.gguf");
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->prefix, "/m/qwen");
  EXPECT_EQ(name->number, 2u);
  EXPECT_EQ(name->count, 3u);
  EXPECT_FALSE(parse_gguf_split_name("/m/qwen.gguf"));
  EXPECT_FALSE(parse_gguf_split_name("-00001-of-00003.gguf"));  // no prefix
  EXPECT_FALSE(parse_gguf_split_name("q-00004-of-00003.gguf"));
  EXPECT_FALSE(parse_gguf_split_name("q-00000-of-00003.gguf"));
  EXPECT_FALSE(parse_gguf_split_name("q-0001x-of-00003.gguf"));
}

TEST(GgufSplit, AnyPartOpensTheWholeSet) {
  TempDir tmp;
  const auto paths = write_split(tmp, {{{"token_embd.weight", "blk.0.attn_q.weight"}}, {{"blk.0.attn_k.weight"}}, {{"output_norm.weight"}}});
  for (const std::string& p : paths) {
    SCOPED_TRACE(p);
    const GgufSet set(p);
    ASSERT_EQ(set.parts().size(), 3u);
    EXPECT_EQ(set.path(), paths[0]);
    EXPECT_EQ(set.metadata().string("general.architecture"), "qwen2");
    ASSERT_EQ(set.tensors().size(), 4u);
    EXPECT_EQ(set.tensors()[0]->name, "token_embd.weight");
    EXPECT_EQ(set.tensors()[3]->name, "output_norm.weight");
    const GgufTensor* k = set.find_tensor("blk.0.attn_k.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->file, paths[1]);
    EXPECT_EQ(std::memcmp(k->data, std::array<float, 4>{1, 2, 3, 4}.data(), 16), 0);
    EXPECT_EQ(set.find_tensor("absent"), nullptr);
  }
}

TEST(GgufSplit, AFirstPartWithoutTensorsIsFine) {
  TempDir tmp;  // gguf-split --no-tensor-first-split
  const auto paths = write_split(tmp, {{{}}, {{"a", "b"}}});
  const GgufSet set(paths[1]);
  EXPECT_EQ(set.tensors().size(), 2u);
  EXPECT_TRUE(set.parts()[0].tensors().empty());
}

TEST(GgufSplit, ASingleFileIsASetOfOne) {
  TempDir tmp;
  const std::string path = tmp.file("plain.gguf");
  const float w[4] = {};
  write_gguf(path, {{"split.count", V::u16(1)}}, {{"w", WeightType::F32, {4}, w}});
  const GgufSet set(path);
  EXPECT_EQ(set.parts().size(), 1u);
  EXPECT_NE(set.find_tensor("w"), nullptr);
  write_gguf(path, {{"split.count", V::u16(0)}}, {});
  expect_message(thrown_error([&] { GgufSet s(path); }), path, {"split.count is 0"});
  write_gguf(path, {{"split.no", V::u16(1)}}, {});
  expect_message(thrown_error([&] { GgufSet s(path); }), path, {"split.no is 1 but the file is not part of a split set"});
}

TEST(GgufSplit, RejectsBrokenSets) {
  {
    TempDir tmp;
    const auto paths = write_split(tmp, {{{"a"}}, {{"b"}}, {{"c"}}});
    std::filesystem::remove(paths[2]);
    expect_message(thrown_error([&] { GgufSet s(paths[0]); }), paths[0],
                   {"part 3 of the split set of 3 parts is missing: " + paths[2]});
  }
  {
    TempDir tmp;
    const auto paths = write_split(tmp, {{{"a"}}, {{"b"}, 4}, {{"c"}}});
    expect_message(thrown_error([&] { GgufSet s(paths[0]); }), paths[1], {"split.count is 4 but", "says the set has 3 parts"});
  }
  {
    TempDir tmp;
    const auto paths = write_split(tmp, {{{"a"}}, {{"b"}, -1, 2}, {{"c"}}});
    expect_message(thrown_error([&] { GgufSet s(paths[0]); }), paths[1], {"split.no is 2; expected 1 (part 2 of 3)"});
  }
  {
    TempDir tmp;
    const auto paths = write_split(tmp, {{{"a", "blk.0.ffn_up.weight"}}, {{"blk.0.ffn_up.weight"}}});
    const std::string e = thrown_error([&] { GgufSet s(paths[0]); });
    expect_message(e, paths[1], {"tensor \"blk.0.ffn_up.weight\" is also in " + paths[0], "unique across the parts"});
  }
  {
    TempDir tmp;
    const auto paths = write_split(tmp, {{{"a"}}, {{"b"}}}, 5);
    expect_message(thrown_error([&] { GgufSet s(paths[0]); }), paths[0], {"split.tensors.count is 5 but the 2 parts hold 2 tensors"});
  }
  {
    TempDir tmp;
    const auto paths = write_split(tmp, {{{"a"}}, {{"b"}}});
    const std::string renamed = tmp.file("renamed.gguf");
    std::filesystem::rename(paths[0], renamed);
    expect_message(thrown_error([&] { GgufSet s(renamed); }), renamed,
                   {"part 1 of a split set of 2 parts, but its name does not end in \"-00001-of-00002.gguf\""});
    // The second part now misses the first.
    expect_message(thrown_error([&] { GgufSet s(paths[1]); }), paths[1], {"part 1 of the split set of 2 parts is missing"});
  }
}

}  // namespace
}  // namespace glass
