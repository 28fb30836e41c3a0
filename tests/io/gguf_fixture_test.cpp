// GGUF files made by llama.cpp (GLASS_FIXTURES/gguf, see its README): every file the
// manifest lists opens; its tensors are the ones its dequant.json lists, in that order,
// with those types and dimensions; every tensor dequantized is bit-identical to ggml's
// (sha256 of the float32 values); the metadata describes the model of the manifest's
// config. Every name, size and type comes from the manifest and the files.
//
// A file holding a type glass cannot decode yet is reported as skipped with the engine's
// refusal (dequantize_values throws glass::Unsupported), after every tensor it can decode
// has been checked.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/json_fields.h"
#include "base/mapped_file.h"
#include "io/gguf.h"
#include "support/sha256.h"
#include "support/test_support.h"

namespace glass {
namespace {

namespace fs = std::filesystem;

struct FixtureFile {
  std::string label;          // for the test name
  std::string path;           // the GGUF file
  std::string dequant;        // its dequant.json
  Json entry;                 // its manifest entry
  Json config;                // the model's config.json
  std::string tokenizer_config;  // tokenizer_config.json with the chat template, or ""
};

class GgufFixtureTest : public ::testing::Test {
 public:
  explicit GgufFixtureTest(FixtureFile f) : f_(std::move(f)) {}

 protected:
  FixtureFile f_;
};

// The file, its size and sha256 as the manifest lists them; tensors as dequant.json lists them.
class Structure : public GgufFixtureTest {
 public:
  using GgufFixtureTest::GgufFixtureTest;
  void TestBody() override {
    {
      const MappedFile bytes(f_.path);
      EXPECT_EQ(bytes.size(), f_.entry.at("bytes").get<size_t>());
      EXPECT_EQ(test::sha256_hex(bytes.data(), bytes.size()), f_.entry.at("sha256").get<std::string>())
          << f_.path << " is not the file the manifest describes";
    }
    const auto start = std::chrono::steady_clock::now();
    const GgufFile file(f_.path);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: opened in %.2f ms (%zu keys, %zu tensors)\n", f_.path.c_str(), ms, file.metadata().size(),
                file.tensors().size());
    // Milliseconds: no copy of tensor data, no allocation per vocabulary entry. The bound
    // leaves room for a loaded machine and the sanitizers.
    EXPECT_LT(ms, 1000.0);
    EXPECT_TRUE(file.version() == 2 || file.version() == 3);

    const Json dq = read_json_file(f_.dequant);
    EXPECT_EQ(dq.at("file").get<std::string>(), fs::path(f_.path).filename().string());
    const Json& want = dq.at("tensors");
    ASSERT_GT(want.size(), 0u) << f_.dequant << " lists no tensors";
    ASSERT_EQ(file.tensors().size(), want.size());
    std::set<std::string> types;
    for (size_t i = 0; i < want.size(); ++i) {
      const GgufTensor& t = file.tensors()[i];
      const std::string name = want[i].at("name").get<std::string>();
      EXPECT_EQ(t.name, name) << "tensor " << i;
      EXPECT_EQ(weight_type_name(t.type), want[i].at("type").get<std::string>()) << name;
      EXPECT_EQ(t.ne, want[i].at("ne").get<std::vector<int64_t>>()) << name;
      EXPECT_EQ(t.shape, std::vector<int64_t>(t.ne.rbegin(), t.ne.rend())) << name;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % file.alignment(), 0u) << name;
      EXPECT_EQ(file.find_tensor(name), &t);
      types.insert(weight_type_name(t.type));
    }
    if (f_.entry.contains("tensor_types")) {
      const auto listed = f_.entry.at("tensor_types").get<std::vector<std::string>>();
      EXPECT_EQ(types, std::set<std::string>(listed.begin(), listed.end()));
    }
    // The split-set entry point sees the same single file.
    const GgufSet set(f_.path);
    EXPECT_EQ(set.parts().size(), 1u);
    EXPECT_EQ(set.tensors().size(), file.tensors().size());
  }
};

// The model description and the tokenizer as the README lists them, against config.json.
class Metadata : public GgufFixtureTest {
 public:
  using GgufFixtureTest::GgufFixtureTest;
  void TestBody() override {
    const GgufFile file(f_.path);
    const GgufMetadata& m = file.metadata();
    const Json& c = f_.config;
    const std::string arch = c.at("model_type").get<std::string>();
    EXPECT_EQ(m.string("general.architecture"), arch);
    EXPECT_EQ(m.u32(arch + ".block_count"), c.at("num_hidden_layers").get<uint32_t>());
    EXPECT_EQ(m.u32(arch + ".context_length"), c.at("max_position_embeddings").get<uint32_t>());
    EXPECT_EQ(m.u32(arch + ".embedding_length"), c.at("hidden_size").get<uint32_t>());
    EXPECT_EQ(m.u32(arch + ".feed_forward_length"), c.at("intermediate_size").get<uint32_t>());
    EXPECT_EQ(m.u32(arch + ".attention.head_count"), c.at("num_attention_heads").get<uint32_t>());
    EXPECT_EQ(m.u32(arch + ".attention.head_count_kv"), c.at("num_key_value_heads").get<uint32_t>());
    EXPECT_EQ(m.f32(arch + ".rope.freq_base"), c.at("rope_theta").get<float>());
    EXPECT_EQ(m.f32(arch + ".attention.layer_norm_rms_epsilon"), c.at("rms_norm_eps").get<float>());
    // llama.cpp's converter writes no output.weight when the embeddings are tied.
    EXPECT_EQ(file.find_tensor("output.weight") == nullptr, c.value("tie_word_embeddings", false));

    EXPECT_EQ(m.string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(m.string("tokenizer.ggml.pre"), "qwen2");
    const size_t vocab = c.at("vocab_size").get<size_t>();
    const GgufArray tokens = m.array("tokenizer.ggml.tokens");
    EXPECT_EQ(tokens.size(), vocab);
    size_t n = 0;
    for (std::string_view token : tokens.strings()) {
      (void)token;
      ++n;
    }
    EXPECT_EQ(n, vocab);
    EXPECT_EQ(m.array("tokenizer.ggml.token_type").numbers<int32_t>().size(), vocab);
    EXPECT_GT(m.array("tokenizer.ggml.merges").size(), 0u);
    EXPECT_LT(m.u32("tokenizer.ggml.eos_token_id"), vocab);
    EXPECT_LT(m.u32("tokenizer.ggml.bos_token_id"), vocab);
    EXPECT_FALSE(m.boolean("tokenizer.ggml.add_bos_token"));
    for (const GgufKeyValue& kv : m.entries()) EXPECT_FALSE(kv.value.excerpt().empty()) << kv.key;

    if (!f_.tokenizer_config.empty()) {
      const Json tc = read_json_file(f_.tokenizer_config);
      ASSERT_TRUE(tc.contains("chat_template")) << f_.tokenizer_config;
      const std::string want = tc.at("chat_template").get<std::string>();
      const std::string_view got = m.string("tokenizer.chat_template");
      EXPECT_TRUE(got == want) << "tokenizer.chat_template (" << got.size() << " bytes) differs from "
                               << f_.tokenizer_config << " (" << want.size() << " bytes)";
    }
  }
};

// Every tensor dequantized: the sha256 of its float32 values equals ggml's.
class Dequantize : public GgufFixtureTest {
 public:
  using GgufFixtureTest::GgufFixtureTest;
  void TestBody() override {
    const GgufFile file(f_.path);
    const Json dq = read_json_file(f_.dequant);
    const Json& want = dq.at("tensors");
    ASSERT_EQ(file.tensors().size(), want.size());
    std::vector<std::string> refused;
    size_t checked = 0;
    std::vector<float> values;
    for (size_t i = 0; i < want.size(); ++i) {
      const GgufTensor& t = file.tensors()[i];
      values.resize(static_cast<size_t>(t.numel));
      try {
        dequantize_values(t.type, t.data, values.data(), t.numel);
      } catch (const Unsupported& e) {
        refused.push_back(str_cat(t.name, ": ", e.what()));
        continue;
      }
      EXPECT_EQ(test::sha256_hex(values.data(), values.size() * sizeof(float)), want[i].at("sha256_f32").get<std::string>())
          << t.name << " (" << weight_type_name(t.type) << " " << t.ne_string() << ")";
      ++checked;
    }
    if (!refused.empty()) {
      std::string first_refusal = refused.front();
      GTEST_SKIP() << refused.size() << " of " << want.size() << " tensors refused (" << checked
                   << " checked bit-exact): " << first_refusal;
    }
  }
};

int run(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string root = test::fixtures_root() + "/gguf";
  const std::string manifest_path = root + "/manifest.json";
  if (!fs::exists(manifest_path)) {
    std::fprintf(stderr, "gguf_fixture_test: %s is missing\n", manifest_path.c_str());
    return 1;
  }
  const Json manifest = read_json_file(manifest_path);
  std::vector<FixtureFile> files;
  if (manifest.contains("small")) {
    const Json& small = manifest.at("small");
    for (const Json& e : small.at("files")) {
      const std::string path = root + "/" + e.at("file").get<std::string>();
      const std::string tc = (fs::path(path).parent_path() / "tokenizer_config.json").string();
      files.push_back({test::test_name(fs::path(path).stem().string()), path, root + "/" + e.at("dir").get<std::string>() + "/dequant.json",
                       e, small.at("config"), fs::exists(tc) ? tc : ""});
    }
  }
  if (manifest.contains("real_vocab")) {
    for (const Json& e : manifest.at("real_vocab")) {
      const std::string path = root + "/" + e.at("file").get<std::string>();
      const std::string hf = root + "/" + e.at("hf_folder").get<std::string>();
      files.push_back({test::test_name(fs::path(path).stem().string()), path, root + "/" + e.at("dir").get<std::string>() + "/dequant.json",
                       e, read_json_file(hf + "/config.json"), hf + "/tokenizer_config.json"});
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "gguf_fixture_test: %s lists no files\n", manifest_path.c_str());
    return 1;
  }
  for (const FixtureFile& f : files) {
    ::testing::RegisterTest("GgufStructure", f.label.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [f]() -> GgufFixtureTest* { return new Structure(f); });
    ::testing::RegisterTest("GgufMetadata", f.label.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [f]() -> GgufFixtureTest* { return new Metadata(f); });
    ::testing::RegisterTest("GgufDequantize", f.label.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [f]() -> GgufFixtureTest* { return new Dequantize(f); });
  }
  return RUN_ALL_TESTS();
}

}  // namespace
}  // namespace glass

int main(int argc, char** argv) { return glass::run(argc, argv); }
