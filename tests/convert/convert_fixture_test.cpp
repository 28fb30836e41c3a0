// glass convert against llama.cpp's own files (GLASS_FIXTURES/gguf, see its README):
//
// - Every small-vocabulary file llama-quantize made from small-F32.gguf (with or without
//   --pure, as its manifest entry's made_by says), made again by glass convert from the same
//   F32 file: the same file type, and every tensor with the same name, type, dimensions and
//   bytes (the quantizers are llama.cpp's reference algorithms, the mixes llama-quantize's).
// - The real-vocabulary file llama.cpp's converter made from its Hugging Face folder, made
//   again by glass convert from that folder: the same metadata (every key, type and value
//   but the cosmetic general.name / general.size_label) and the same tensors.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "base/json_fields.h"
#include "convert/gguf_convert.h"
#include "io/gguf.h"
#include "support/test_support.h"

namespace glass {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string label, reference, source, type;
  bool pure = false;
};

void expect_same_tensors(const GgufFile& got, const GgufFile& want) {
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (const GgufTensor& w : want.tensors()) {
    const GgufTensor* g = got.find_tensor(w.name);
    ASSERT_NE(g, nullptr) << w.name << " is missing";
    EXPECT_EQ(weight_type_name(g->type), weight_type_name(w.type)) << w.name;
    ASSERT_EQ(g->ne, w.ne) << w.name;
    if (g->type != w.type) continue;
    ASSERT_EQ(g->nbytes, w.nbytes) << w.name;
    size_t first = g->nbytes;
    for (size_t i = 0; i < g->nbytes && first == g->nbytes; ++i)
      if (g->data[i] != w.data[i]) first = i;
    EXPECT_EQ(first, g->nbytes) << w.name << " (" << weight_type_name(w.type) << ") differs from byte " << first;
  }
}

// A value as comparable text: the type and every element.
std::string full_text(const GgufValue& v) {
  if (v.type() != GgufType::Array) return str_cat(gguf_type_name(v.type()), " ", v.excerpt(1 << 20));
  const GgufArray a = v.as_array();
  std::string s = str_cat("array of ", gguf_type_name(a.element_type()), ":");
  for (size_t i = 0; i < a.size(); ++i) {
    s += ' ';
    s += full_text(a.at(i));
  }
  return s;
}

class Convert : public ::testing::Test {
 public:
  explicit Convert(Case c) : c_(std::move(c)) {}
  void TestBody() override {
    const test::TempDir tmp;
    const std::string out = tmp.file("converted.gguf");
    ConvertOptions options;
    options.type = c_.type;
    options.pure = c_.pure;
    options.threads = 2;
    convert_to_gguf(c_.source, out, options);
    const GgufFile got(out), want(c_.reference);
    expect_same_tensors(got, want);
    EXPECT_EQ(got.metadata().u32("general.file_type"), want.metadata().u32("general.file_type"));
    if (c_.source.ends_with(".gguf")) return;
    std::set<std::string> keys;
    for (const GgufKeyValue& kv : want.metadata().entries()) {
      const std::string key(kv.key);
      keys.insert(key);
      if (key == "general.name" || key == "general.size_label") continue;
      const GgufValue* g = got.metadata().find(key);
      if (g == nullptr) {
        ADD_FAILURE() << "metadata key " << key << " is missing";
        continue;
      }
      EXPECT_TRUE(full_text(*g) == full_text(kv.value)) << key << ": " << g->excerpt() << " vs " << kv.value.excerpt();
    }
    for (const GgufKeyValue& kv : got.metadata().entries())
      EXPECT_TRUE(keys.count(std::string(kv.key))) << "metadata key " << kv.key << " is not in " << c_.reference;
  }

 private:
  Case c_;
};

int run(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string root = test::fixtures_root() + "/gguf";
  const Json manifest = read_json_file(root + "/manifest.json");
  std::vector<Case> cases;
  if (manifest.contains("small")) {
    std::string f32;
    for (const Json& e : manifest.at("small").at("files"))
      if (e.at("type") == "F32") f32 = root + "/" + e.at("file").get<std::string>();
    for (const Json& e : manifest.at("small").at("files")) {
      if (e.at("type") == "F32" || f32.empty()) continue;
      const std::string made_by = e.value("made_by", "");
      cases.push_back({str_cat("small_", test::test_name(e.at("type").get<std::string>())), root + "/" + e.at("file").get<std::string>(), f32,
                       e.at("type").get<std::string>(), made_by.find("--pure") != std::string::npos});
    }
  }
  if (manifest.contains("real_vocab"))
    for (const Json& e : manifest.at("real_vocab"))
      cases.push_back({test::test_name(fs::path(e.at("file").get<std::string>()).stem().string()),
                       root + "/" + e.at("file").get<std::string>(), root + "/" + e.at("hf_folder").get<std::string>(),
                       e.at("outtype").get<std::string>(), false});
  for (const Case& c : cases)
    ::testing::RegisterTest("ConvertLikeLlamaCpp", c.label.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new Convert(c); });
  return RUN_ALL_TESTS();
}

}  // namespace
}  // namespace glass

int main(int argc, char** argv) { return glass::run(argc, argv); }
