#include "io/checkpoint.h"

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::TempDir;
using test::thrown_error;

TEST(Checkpoint, OpensSingleFileCheckpoint) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  Checkpoint ck(tmp.path());
  EXPECT_EQ(ck.config().hidden_size, 32);
  EXPECT_EQ(ck.weight_files().size(), 1u);
  EXPECT_NE(ck.find("model.embed_tokens.weight"), nullptr);
  EXPECT_EQ(ck.find("lm_head.weight"), nullptr);  // tied
  EXPECT_EQ(ck.tensors().size(), 2u + 12u * 2u);  // embedding, final norm, 12 per layer
}

TEST(Checkpoint, MissingFolderConfigOrWeights) {
  TempDir tmp;
  std::string e = thrown_error([&] { Checkpoint ck(tmp.file("nope")); });
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;

  e = thrown_error([&] { Checkpoint ck(tmp.path()); });
  EXPECT_NE(e.find(tmp.file("config.json") + ": missing"), std::string::npos) << e;

  test::write_string(tmp.file("config.json"), test::tiny_config().to_json().dump());
  e = thrown_error([&] { Checkpoint ck(tmp.path()); });
  EXPECT_NE(e.find("no weights"), std::string::npos) << e;
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
}

TEST(Checkpoint, UnknownArchitectureNamesConfig) {
  TempDir tmp;
  Json j = test::tiny_config().to_json();
  j["architectures"] = {"MistralForCausalLM"};
  test::write_string(tmp.file("config.json"), j.dump());
  const std::string e = thrown_error([&] { Checkpoint ck(tmp.path()); });
  EXPECT_NE(e.find(tmp.file("config.json")), std::string::npos) << e;
  EXPECT_NE(e.find("MistralForCausalLM"), std::string::npos) << e;
}

// Splits a single-file checkpoint into two shards with an index.
void shard(const std::string& dir, const Json& index_override = nullptr) {
  const std::string single = dir + "/model.safetensors";
  std::vector<TensorToWrite> first, second;
  Json map = Json::object();
  {
    SafetensorsFile f(single);
    std::vector<std::string> names;
    for (const auto& [name, _] : f.tensors()) names.push_back(name);
    for (size_t i = 0; i < names.size(); ++i) {
      const TensorInfo& t = *f.find(names[i]);
      auto& dst = i % 2 ? second : first;
      dst.push_back({t.name, t.dtype, t.shape, t.data, t.nbytes});
      map[t.name] = i % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
    }
    write_safetensors(dir + "/model-00001-of-00002.safetensors", first);
    write_safetensors(dir + "/model-00002-of-00002.safetensors", second);
  }
  std::remove(single.c_str());
  Json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", map}};
  if (!index_override.is_null()) index.merge_patch(index_override);
  test::write_string(dir + "/model.safetensors.index.json", index.dump());
}

TEST(Checkpoint, OpensShardedCheckpoint) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  shard(tmp.path());
  Checkpoint ck(tmp.path());
  EXPECT_EQ(ck.weight_files().size(), 2u);
  EXPECT_EQ(ck.tensors().size(), 26u);
}

TEST(Checkpoint, ShardNamedInIndexButAbsent) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  shard(tmp.path());
  std::remove(tmp.file("model-00002-of-00002.safetensors").c_str());
  const std::string e = thrown_error([&] { Checkpoint ck(tmp.path()); });
  EXPECT_NE(e.find("model.safetensors.index.json"), std::string::npos) << e;
  EXPECT_NE(e.find("shard \"model-00002-of-00002.safetensors\""), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
}

TEST(Checkpoint, IndexThatLies) {
  struct Lie {
    Json patch;
    const char* expect;
  };
  const std::vector<Lie> lies = {
      {{{"weight_map", {{"model.extra.weight", "model-00001-of-00002.safetensors"}}}}, "does not contain it"},
      {{{"weight_map", {{"model.norm.weight", "../elsewhere.safetensors"}}}}, "plain file names"},
      {{{"weight_map", {{"model.norm.weight", 7}}}}, "must be a file name string"},
      {{{"weight_map", {1, 2}}}, "\"weight_map\" must be an object"},
  };
  for (const auto& lie : lies) {
    TempDir tmp;
    test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
    shard(tmp.path(), lie.patch);
    const std::string e = thrown_error([&] { Checkpoint ck(tmp.path()); });
    EXPECT_NE(e.find("model.safetensors.index.json"), std::string::npos) << e;
    EXPECT_NE(e.find(lie.expect), std::string::npos) << e;
  }
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  shard(tmp.path());
  test::write_string(tmp.file("model.safetensors.index.json"), R"({"weight_map": )");
  const std::string e = thrown_error([&] { Checkpoint ck(tmp.path()); });
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
}

TEST(Checkpoint, TruncatedWeights) {
  TempDir tmp;
  test::write_tiny_checkpoint(tmp.path(), test::tiny_config());
  std::string bytes = test::read_string(tmp.file("model.safetensors"));
  test::write_string(tmp.file("model.safetensors"), bytes.substr(0, bytes.size() - 100));
  const std::string e = thrown_error([&] { Checkpoint ck(tmp.path()); });
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("point past the end of the file"), std::string::npos) << e;
}

}  // namespace
}  // namespace glass
