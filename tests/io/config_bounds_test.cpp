// config.json at the edges of its input (issue 15 items 3 and 8, and the special files of
// item 10): JSON nested deeper than any config, values that would size gigabytes of
// allocations or wrap 64-bit products, and a FIFO where a file should be.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "base/error.h"
#include "io/checkpoint.h"
#include "io/model_config.h"
#include "qwen_7b_config.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::qwen_7b_config;
using test::thrown_error;

std::string nested_arrays(size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

// Issue 15 item 3: the error message for a wrong-typed field serialized the value with
// the recursive dump(), so 200,000 levels of nesting overflowed the stack.
TEST(ConfigBounds, DeepJsonInConfigIsAClearError) {
  test::TempDir tmp;
  for (const char* field : {"hidden_size", "architectures", "rope_scaling", "torch_dtype"}) {
    std::string text = qwen_7b_config().dump();
    text.insert(1, str_cat("\"", field, "\": ", nested_arrays(200000), ", "));
    const std::string path = tmp.file("config.json");
    test::write_string(path, text);
    const std::string e = thrown_error([&] { load_model_config(path); });
    EXPECT_NE(e.find(path), std::string::npos) << e.substr(0, 300);
    EXPECT_NE(e.find("levels"), std::string::npos) << e.substr(0, 300);
    EXPECT_LT(e.size(), 400u) << "the message does not carry the value";
  }
}

// Issue 15 item 8: values past any real checkpoint's are refused while parsing, naming the
// field and the bound, before anything they size is allocated (2e7 layers grew to 8.7 GB).
TEST(ConfigBounds, ValuesPastTheirBoundsAreRefusedNamingTheField) {
  const std::pair<const char*, int64_t> cases[] = {
      {"num_hidden_layers", 20000000},
      {"hidden_size", int64_t{1} << 40},
      {"vocab_size", int64_t{1} << 40},
      {"intermediate_size", int64_t{1} << 40},
      {"num_attention_heads", int64_t{1} << 31},
      {"max_position_embeddings", int64_t{1} << 62},
      {"head_dim", int64_t{1} << 40},
  };
  for (const auto& [field, value] : cases) {
    Json j = qwen_7b_config();
    j[field] = value;
    if (std::string(field) == "num_attention_heads") j["num_key_value_heads"] = value;
    const std::string e = thrown_error([&] { parse_model_config(j, "config.json"); });
    EXPECT_NE(e.find(str_cat("\"", field, "\"")), std::string::npos) << field << ": " << e;
    EXPECT_NE(e.find("at most"), std::string::npos) << field << ": " << e;
  }
  Json moe = test::published_config("Qwen3-30B-A3B");
  for (const char* field : {"num_experts", "moe_intermediate_size", "decoder_sparse_step"}) {
    Json j = moe;
    j[field] = int64_t{1} << 40;
    const std::string e = thrown_error([&] { parse_model_config(j, "config.json"); });
    EXPECT_NE(e.find(str_cat("\"", field, "\"")), std::string::npos) << field << ": " << e;
  }
  Json yarn = qwen_7b_config();
  yarn["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", int64_t{1} << 62}};
  EXPECT_NE(thrown_error([&] { parse_model_config(yarn, "config.json"); }).find("original_max_position_embeddings"),
            std::string::npos);
}

// At the bounds, every count the config implies is exact: no 64-bit product wraps.
TEST(ConfigBounds, CountsAtTheBoundsAreExact) {
  Json j = test::published_config("Qwen3-30B-A3B");
  // The largest values each field may take.
  j["hidden_size"] = 65536;
  j["num_hidden_layers"] = 1024;
  j["num_attention_heads"] = 1024;
  j["num_key_value_heads"] = 1024;
  j["head_dim"] = 1024;
  j["intermediate_size"] = 1 << 20;
  j["moe_intermediate_size"] = 1 << 20;
  j["num_experts"] = 4096;
  j["num_experts_per_tok"] = 4096;
  j["vocab_size"] = 1 << 22;
  j["max_position_embeddings"] = 1 << 24;
  j["decoder_sparse_step"] = 1;
  const ModelConfig c = parse_model_config(j, "config.json");
  using Wide = __int128;
  const Wide h = 65536, q = Wide{1024} * 1024, layers = 1024, experts = 4096, moe = 1 << 20, vocab = 1 << 22;
  const Wide attention = 2 * h + h * q + 2 * h * q + q * h + 2 * 1024;  // norms, q, k, v, o, q/k norms
  const Wide mlp = experts * h + experts * 3 * h * moe;                 // router + experts
  const Wide expected = 2 * vocab * h + h + layers * (attention + mlp);
  ASSERT_LT(expected, Wide{INT64_MAX});
  EXPECT_EQ(Wide{c.parameter_count()}, expected);
  EXPECT_EQ(c.kv_bytes_per_token(4), int64_t{2} * 1024 * 1024 * 1024 * 4);
}

// Issue 15 item 10: a FIFO named config.json blocked the loader forever (open() waits
// for a writer); it is refused as not a regular file.
TEST(ConfigBounds, AFifoAsConfigIsRefusedWithoutBlocking) {
  test::TempDir tmp;
  const std::string path = tmp.file("config.json");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto done = std::async(std::launch::async, [&] { return thrown_error([&] { load_model_config(path); }); });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    // Unblock the reader so the test can end, then fail.
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    FAIL() << "reading a FIFO as config.json blocked";
  }
  const std::string e = done.get();
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
  // The same through a checkpoint folder.
  const std::string e2 = thrown_error([&] { Checkpoint ckpt(tmp.path()); });
  EXPECT_NE(e2.find("not a regular file"), std::string::npos) << e2;
}

// JSON inputs have a size cap, checked before reading (a sparse file takes no disk).
TEST(ConfigBounds, OversizedJsonFileIsRefusedBeforeReading) {
  test::TempDir tmp;
  const std::string path = tmp.file("config.json");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 30), 0);
  ::close(fd);
  const std::string e = thrown_error([&] { load_model_config(path); });
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find("limit"), std::string::npos) << e;
}

}  // namespace
}  // namespace glass
