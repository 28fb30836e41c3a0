// End-to-end tests of the glass binary.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "io/model_config.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::run_glass;
using test::shell_quote;
using test::TempDir;

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// The published Qwen3 configs: parameter counts against the model cards (0.6B exactly,
// as DESIGN.md has it, with the tied embedding counted once), KV bytes per token.
TEST(Cli, InspectReportsTheQwen3Family) {
  TempDir tmp;
  struct Case {
    const char* name;
    const char* parameters;
    const char* kv;
    const char* extra;
  };
  for (const Case& c : {Case{"Qwen3-0.6B", "596,049,920", "KV cache per token    112.0 KiB in bf16 = 2 (K, V) x 28",
                             "heads x head dim = 2048 != hidden 1024"},
                        Case{"Qwen3-8B", "8,190,735,360", "KV cache per token    144.0 KiB in bf16",
                             "q/k norm              yes"},
                        Case{"Qwen3-30B-A3B", "30,532,122,624", "KV cache per token    96.0 KiB in bf16",
                             "128 of intermediate 768, 8 routed per token"}}) {
    const std::string path = tmp.file(std::string(c.name) + ".json");
    test::write_string(path, test::published_config(c.name).dump());
    const auto r = run_glass("inspect --kv-type bf16 -m " + shell_quote(path));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("parameters            ") + c.parameters), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.kv), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.extra), std::string::npos) << r.out;
  }
  const auto r = run_glass("inspect --format json -m " + shell_quote(tmp.file("Qwen3-30B-A3B.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["active_parameters"], 3353032704);
  EXPECT_EQ(j["config"]["num_experts"], 128);
}

TEST(Cli, InspectShowsYarn) {
  TempDir tmp;
  Json config = test::published_config("Qwen3-8B");
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  test::write_string(tmp.file("config.json"), config.dump());
  const auto r = run_glass("inspect -m " + shell_quote(tmp.file("config.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rope scaling          yarn, factor 4 over 32768 original positions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention factor 1.13863"), std::string::npos) << r.out;
}

TEST(Cli, InspectReports7BKVCachePerToken) {
  TempDir tmp;
  ModelConfig c;
  c.hidden_size = 3584;
  c.num_layers = 28;
  c.num_heads = 28;
  c.num_kv_heads = 4;
  c.head_dim = 128;
  c.intermediate_size = 18944;
  c.vocab_size = 152064;
  c.max_position_embeddings = 32768;
  c.rope_theta = 1e6;
  test::write_string(tmp.file("config.json"), c.to_json().dump(2));
  auto r = run_glass("inspect --kv-type bf16 -m " + shell_quote(tmp.file("config.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("KV cache per token    56.0 KiB in bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KV cache full context 1.8 GiB for 32768 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("28 query / 4 KV"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("7,615,616,512"), std::string::npos) << r.out;
  r = run_glass("inspect --kv-type bf16 --format json -m " + shell_quote(tmp.file("config.json")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["kv_cache"]["bytes_per_token"], 57344);
  EXPECT_EQ(j["kv_cache"]["bytes_full_context"], 57344ll * 32768);
  r = run_glass("inspect --kv-type f32 -m " + shell_quote(tmp.file("config.json")));
  EXPECT_NE(r.out.find("KV cache per token    112.0 KiB in f32"), std::string::npos) << r.out;
}

// inspect's KV cache for the full context is what the commands that run the model
// allocate: the same default --kv-type everywhere, and the bytes glass serve reserves for
// one full context.
TEST(Cli, InspectKVCacheIsWhatTheModelCommandsAllocate) {
  const std::string f32_default = "--kv-type TEXT=f32";
  for (const char* command : {"inspect", "run", "chat", "serve", "bench", "logits", "trace"}) {
    const auto help = run_glass(std::string(command) + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    EXPECT_NE(help.out.find(f32_default), std::string::npos) << command << " --help:\n" << help.out;
  }
  TempDir tmp;
  const std::string err = tmp.file("err");
  const auto served = test::run_command(
      shell_quote(test::glass_binary()) + " serve --port 0 --quiet --parallel 1 --ctx-size 32768 2>" +
      shell_quote(err) + " & pid=$!; for i in $(seq 100); do grep -q 'listening on' " + shell_quote(err) +
      " && break; sleep 0.1; done; kill -TERM $pid; wait $pid; cat " + shell_quote(err));
  const auto kv_at = served.out.find("KV cache ");
  ASSERT_NE(kv_at, std::string::npos) << served.out;
  const std::string serve_kv = served.out.substr(kv_at, served.out.find(';', kv_at) - kv_at);

  auto r = run_glass("inspect --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json kv = Json::parse(r.out)["kv_cache"];
  ASSERT_EQ(kv["context"], 32768);
  EXPECT_EQ(kv["dtype"], "f32");
  const int64_t full = kv["bytes_full_context"].get<int64_t>();
  EXPECT_EQ(full, kv["bytes_per_token"].get<int64_t>() * 32768);
  EXPECT_EQ(serve_kv, "KV cache " + format_bytes(static_cast<double>(full)) + " (32768 tokens, f32, prefix cache on)");
}

// Issue 24 item 14: "KV cache (bf16)         256 bytes per token (256 B)" stood out of the
// column and said its size twice.
TEST(Cli, InspectSummaryIsOneColumnOfLabelsAndSaysEachSizeOnce) {
  TempDir tmp;
  test::write_string(tmp.file("moe.json"), test::published_config("Qwen3-30B-A3B").dump());
  // 2 x 3 layers x 1 KV head x 96 dim x 2 bytes = 1,152 bytes: 1.125 KiB, which one
  // decimal rounds, so the exact bytes follow.
  Json odd = test::published_config("Qwen3-8B");
  odd["num_hidden_layers"] = 3;
  odd["num_key_value_heads"] = 1;
  odd["head_dim"] = 96;
  test::write_string(tmp.file("odd.json"), odd.dump());
  struct Case {
    std::string args, kv_line;
  };
  for (const Case& c :
       {Case{"inspect", "KV cache per token    1.0 KiB in f32 = 2 (K, V) x 4 layers x 2 KV heads x 16 dim x 4 bytes"},
        Case{"inspect -m " + shell_quote(tmp.file("moe.json")), "KV cache per token    192.0 KiB in f32"},
        Case{"inspect --kv-type bf16 -m " + shell_quote(tmp.file("odd.json")),
             "KV cache per token    1.1 KiB (1,152 bytes) in bf16"}}) {
    const auto r = run_glass(c.args);
    ASSERT_EQ(r.exit_code, 0) << c.args << "\n" << r.err;
    // The summary is every line before the first blank one.
    const std::string summary = r.out.substr(0, std::min(r.out.find("\n\n"), r.out.size() - 1) + 1);
    size_t lines = 0;
    for (size_t at = 0, end; (end = summary.find('\n', at)) != std::string::npos; at = end + 1, ++lines) {
      const std::string line = summary.substr(at, end - at);
      // A label of at most 21 characters (words with single spaces), one space, the value.
      ASSERT_GT(line.size(), 22u) << line;
      EXPECT_NE(line[0], ' ') << line;
      const std::string label = line.substr(0, 21);
      EXPECT_EQ(label.substr(0, label.find_last_not_of(' ') + 1).find("  "), std::string::npos)
          << c.args << ":\n" << line;
      EXPECT_EQ(line[21], ' ') << c.args << ":\n" << line;
      EXPECT_NE(line[22], ' ') << c.args << ":\n" << line;
      // A size once: no "N bytes (human)" pairs.
      EXPECT_EQ(line.find(" bytes ("), std::string::npos) << line;
    }
    EXPECT_GE(lines, 17u) << r.out;
    EXPECT_NE(summary.find("\n" + c.kv_line), std::string::npos) << c.args << ":\n" << summary;
    EXPECT_NE(summary.find("\nKV cache full context "), std::string::npos) << summary;
  }
}

TEST(Cli, InspectListsTensorsOfTheDemoModel) {
  const auto r = run_glass("inspect");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("built-in demo model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("meaningless"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("model.embed_tokens.weight"), std::string::npos);
  EXPECT_NE(r.out.find("[151936, 64]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BF16"), std::string::npos);
  EXPECT_NE(r.out.find("model.layers.3.mlp.down_proj.weight"), std::string::npos);
}

// Issue 24 item 8: bench reported its bandwidth probe's 512 MiB buffer as the model's peak
// RSS (548.7 MiB on the demo model, 35.3 MiB with --no-bandwidth).
TEST(Cli, BenchPeakRssIsTheModelsWithOrWithoutTheBandwidthProbe) {
  const std::string bench = "bench -p 8 -n 4 -r 1 -t 2 --format json";
  const auto with_probe = run_glass(bench);
  ASSERT_EQ(with_probe.exit_code, 0) << with_probe.err;
  const auto without = run_glass(bench + " --no-bandwidth");
  ASSERT_EQ(without.exit_code, 0) << without.err;
  const Json a = Json::parse(with_probe.out), b = Json::parse(without.out);
  ASSERT_TRUE(a.contains("read_bandwidth_gb_s")) << a.dump();  // the probe ran
  ASSERT_FALSE(b.contains("read_bandwidth_gb_s")) << b.dump();
  const auto peak = a["peak_rss_bytes"].get<double>(), peak_without = b["peak_rss_bytes"].get<double>();
  // The demo model's weights are 37.5 MiB (mapped, the embedding's rows read only as used):
  // the model's peak is far below the probe's buffer.
  EXPECT_GT(peak_without, 0.0);
  EXPECT_LT(peak_without, 256.0 * (1 << 20));
  EXPECT_NEAR(peak, peak_without, 16.0 * (1 << 20)) << "with the probe " << format_bytes(peak) << ", without "
                                                    << format_bytes(peak_without);
}

// --depth (llama-bench's -d): the tests run after that many tokens in the cache, which the
// decode's read bytes count.
TEST(Cli, BenchAtADepthFillsTheContextFirst) {
  const std::string bench = "bench -p 8 -n 4 -r 1 -t 2 --no-bandwidth --no-peak --format json";
  const auto flat = run_glass(bench), deep = run_glass(bench + " --depth 300");
  ASSERT_EQ(flat.exit_code, 0) << flat.err;
  ASSERT_EQ(deep.exit_code, 0) << deep.err;
  const Json a = Json::parse(flat.out), b = Json::parse(deep.out);
  EXPECT_EQ(a["depth"], 0);
  EXPECT_EQ(b["depth"], 300);
  // The cache held 300 + 8 positions, not 8; a decode step read 300 + 2.5 on average, not 2.5.
  EXPECT_GT(b["kv_cache_bytes"].get<double>(), 10 * a["kv_cache_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(b["decode_kv_bytes"].get<double>() / a["decode_kv_bytes"].get<double>(), 302.5 / 2.5);
  const auto text = run_glass("bench -p 8 -n 4 -r 1 --depth 20 --no-bandwidth --no-peak");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("pp8 @ d20"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tg4 @ d20"), std::string::npos) << text.out;
  const auto too_deep = run_glass("bench -p 8 -n 4 -r 1 --depth 32760");
  EXPECT_NE(too_deep.exit_code, 0);
  EXPECT_NE(too_deep.err.find("--depth + --prompt + --generate (32772) exceed the model's context of 32768"),
            std::string::npos)
      << too_deep.err;
}

TEST(Cli, LogitsWritesLastOrAllPositions) {
  TempDir tmp;
  auto r = run_glass("logits --ids '9707 11 1879' --out " + shell_quote(tmp.file("last.f32")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto last = test::read_f32_file(tmp.file("last.f32"));
  ASSERT_EQ(last.size(), 151936u);
  r = run_glass("logits -m " + shell_quote(test::demo_model_dir()) + " --ids 9707,11,1879 --all-positions --out " +
                shell_quote(tmp.file("all.f32")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto all = test::read_f32_file(tmp.file("all.f32"));
  ASSERT_EQ(all.size(), 3u * 151936u);
  for (size_t i = 0; i < last.size(); ++i) ASSERT_EQ(all[2 * 151936 + i], last[i]);
}

// --matmul-precision bf16 rounds the activations of the demo model's bf16 matrices: logits
// near the float ones (the top one the same) but not equal.
TEST(Cli, LogitsWithBf16Activations) {
  TempDir tmp;
  for (const char* precision : {"float", "bf16"}) {
    const auto r = run_glass(std::string("logits --ids '9707 11 1879' --matmul-precision ") + precision + " --out " +
                             shell_quote(tmp.file(std::string(precision) + ".f32")));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto exact = test::read_f32_file(tmp.file("float.f32")), rounded = test::read_f32_file(tmp.file("bf16.f32"));
  ASSERT_EQ(exact.size(), rounded.size());
  double worst = 0;
  for (size_t i = 0; i < exact.size(); ++i) worst = std::max(worst, std::fabs(double(exact[i]) - rounded[i]));
  EXPECT_GT(worst, 1e-4);
  EXPECT_LT(worst, 0.5);
  EXPECT_EQ(std::max_element(exact.begin(), exact.end()) - exact.begin(),
            std::max_element(rounded.begin(), rounded.end()) - rounded.begin());
}

TEST(Cli, BadInputGivesClearErrorAndNoOutputFile) {
  TempDir tmp;
  const std::string out = tmp.file("x.f32");
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"logits -m " + shell_quote(tmp.file("none")) + " --ids 1 --out " + shell_quote(out),
       "no such file or folder; -m takes"},
      {"logits -m " + shell_quote(tmp.path()) + " --ids 1 --out " + shell_quote(out), "config.json: missing"},
      {"logits --ids 'one two' --out " + shell_quote(out), "--ids: \"one\" is not a token id"},
      {"logits --ids '' --out " + shell_quote(out), "--ids: no token ids"},
      {"logits --ids 151936 --out " + shell_quote(out), "token id 151936 is out of range"},
      {"logits --ids 1 --out " + shell_quote(tmp.file("no/such/dir/x.f32")), "cannot create"},
      {"inspect --kv-type q4 ", "--kv-type"},
      {"logits --matmul-precision fp8 --ids 1 --out " + shell_quote(out),
       "--matmul-precision: \"fp8\" is not one of float, bf16"},
      {"convert --type Q4_K_X --out " + shell_quote(out) + " -m " + shell_quote(test::demo_model_dir()),
       "--type: \"Q4_K_X\" is not one of"},
      {"convert --type Q8_0 --out " + shell_quote(out) + " -m " + shell_quote(tmp.file("none")),
       "no such file or folder; -m takes"},
      {"convert --type Q8_0 --out " + shell_quote(out) + " -m " + shell_quote(tmp.path()), "config.json: missing"},
      {"convert --type Q8_0 --out " + shell_quote(tmp.file("no/such/dir/x.gguf")) + " -m " +
           shell_quote(test::demo_model_dir()),
       "cannot create"},
  };
  for (const auto& c : cases) {
    const auto r = run_glass(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_LT(r.exit_code, 128) << c.args << ": crashed\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(file_exists(out)) << c.args << " left an output file";
  }
}

TEST(Cli, UsageErrors) {
  auto r = run_glass("");
  EXPECT_NE(r.exit_code, 0);
  r = run_glass("frobnicate");
  EXPECT_NE(r.exit_code, 0);
  r = run_glass("logits --ids 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

TEST(Cli, RandomModelIsDeterministic) {
  TempDir a, b;
  ASSERT_EQ(run_glass("random-model --like demo --seed 3 --no-tokenizer --quiet --out " + shell_quote(a.path())).exit_code, 0);
  ASSERT_EQ(run_glass("random-model --like demo --seed 3 --no-tokenizer --quiet --out " + shell_quote(b.path())).exit_code, 0);
  EXPECT_EQ(test::read_string(a.file("model.safetensors")), test::read_string(b.file("model.safetensors")));
  const auto r = run_glass("random-model --like qwen9 --out " + shell_quote(a.file("x")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown model shape \"qwen9\""), std::string::npos) << r.err;
}


// Bare `glass`, --version, a mistyped command and a mistyped flag: a list, a version, a
// suggestion; never only "A subcommand is required".
TEST(Cli, CommandLineMistakesGetHelp) {
  auto r = run_glass("");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("Usage: glass [OPTIONS] SUBCOMMAND"), std::string::npos) << r.out;
  // The most used commands first, in groups.
  const size_t run = r.out.find("\n  run "), chat = r.out.find("\n  chat "), logits = r.out.find("\n  logits ");
  ASSERT_NE(run, std::string::npos) << r.out;
  EXPECT_LT(run, chat);
  EXPECT_LT(chat, logits);
  EXPECT_NE(r.out.find("Generate:"), std::string::npos) << r.out;
  r = run_glass("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out.starts_with("glass 0.")) << r.out;
  r = run_glass("runn -p hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'runn' is not a glass command; did you mean 'glass run'?"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Commands: run chat serve"), std::string::npos) << r.err;
  r = run_glass("frobnicate");
  EXPECT_NE(r.err.find("'frobnicate' is not a glass command\n"), std::string::npos) << r.err;
  r = run_glass("run --temper 0.5 -p hi");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("glass run: unknown option '--temper'; did you mean '--temperature'?"), std::string::npos) << r.err;
  r = run_glass("run --top_k=3 -p hi");
  EXPECT_NE(r.err.find("unknown option '--top_k'; did you mean '--top-k'?"), std::string::npos) << r.err;
}

// -m names a folder or a GGUF file; a weight file, a text file or a missing path says so.
TEST(Cli, ModelFlagSaysWhatItTakes) {
  TempDir tmp;
  const std::string weights = test::demo_model_dir() + "/model.safetensors";
  for (const char* command : {"run -p hi -m ", "inspect -m ", "tokenize --text hi -m ", "chat-template -m "}) {
    const auto r = run_glass(command + shell_quote(weights));
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_NE(r.err.find("is a safetensors weight file, not a model; -m takes a checkpoint folder"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("here -m " + test::demo_model_dir()), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("not valid JSON"), std::string::npos) << r.err;
  }
  test::write_string(tmp.file("notes.txt"), "hello");
  auto r = run_glass("run -p hi -m " + shell_quote(tmp.file("notes.txt")));
  EXPECT_NE(r.err.find("is neither a checkpoint folder nor a GGUF file"), std::string::npos) << r.err;
  r = run_glass("run -p hi -m " + shell_quote(tmp.file("missing")));
  EXPECT_NE(r.err.find("no such file or folder; -m takes"), std::string::npos) << r.err;
  // A GGUF file is known by its magic, whatever its name.
  r = run_glass("convert -m " + shell_quote(test::demo_model_dir()) + " --out " + shell_quote(tmp.file("demo.gguf")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(std::rename(tmp.file("demo.gguf").c_str(), tmp.file("demo-download").c_str()), 0);
  r = run_glass("inspect -m " + shell_quote(tmp.file("demo-download")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Qwen2ForCausalLM"), std::string::npos) << r.out;
}

// JSON the user wrote: the line, the column and what was expected, not the parser's text.
TEST(Cli, JsonMistakesAreExplained) {
  const auto r = run_glass("chat-template", "[{\"role\": \"user\",\n  \"content\": \"hi\"\n  \"x\": 1}]");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("stdin: not valid JSON at line 3, column 3: expected ',' or '}' after an object member, found \"x\""),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
}

// Issue 24 item 4: random-model overwrote a real checkpoint's model.safetensors and left
// its vocab, merges and golden files beside the random weights.
TEST(Cli, RandomModelRefusesAFolderThatHoldsFiles) {
  TempDir real;
  for (const char* name : {"model.safetensors", "config.json", "vocab.json", "merges.txt", "golden.json"})
    test::write_string(real.file(name), name);
  for (const char* force : {"", " --force"}) {
    const auto r = run_glass("random-model --like demo --quiet --out " + shell_quote(real.path()) + force);
    EXPECT_EQ(r.exit_code, 1) << force;
    EXPECT_NE(r.err.find("--out " + real.path() + ": the folder holds files random-model does not write (golden.json)"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("give a new or empty folder"), std::string::npos) << r.err;
    EXPECT_EQ(test::read_string(real.file("model.safetensors")), "model.safetensors") << "overwritten" << force;
  }
  const auto r = run_glass("random-model --like demo --quiet --out " + shell_quote(real.file("golden.json")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("golden.json: exists and is not a folder"), std::string::npos) << r.err;
}

TEST(Cli, RandomModelReplacesItsOwnCheckpointOnlyWithForce) {
  TempDir dir, fresh;
  const std::string out = " --quiet --out " + shell_quote(dir.path());
  ASSERT_EQ(run_glass("random-model --like demo --seed 3" + out).exit_code, 0);
  const std::string seed3 = test::read_string(dir.file("model.safetensors"));
  // As if an earlier --tokenizer had them; the built-in tokenizer has neither.
  test::write_string(dir.file("vocab.json"), "{}");
  test::write_string(dir.file("merges.txt"), "");

  auto r = run_glass("random-model --like demo --seed 4" + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--out " + dir.path() + ": the folder already holds a checkpoint (config.json, "
                       "generation_config.json, merges.txt, model.safetensors, tokenizer.json, tokenizer_config.json "
                       "and 1 more); give a new or empty folder, or --force to replace it"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::read_string(dir.file("model.safetensors")), seed3);

  r = run_glass("random-model --like demo --seed 4 --force" + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(run_glass("random-model --like demo --seed 4 --quiet --out " + shell_quote(fresh.path())).exit_code, 0);
  EXPECT_EQ(test::read_string(dir.file("model.safetensors")), test::read_string(fresh.file("model.safetensors")));
  EXPECT_FALSE(file_exists(dir.file("vocab.json")));  // the earlier tokenizer's files are gone
  EXPECT_FALSE(file_exists(dir.file("merges.txt")));
  EXPECT_EQ(test::read_string(dir.file("tokenizer.json")), test::read_string(fresh.file("tokenizer.json")));
  EXPECT_EQ(run_glass("run -n 2 -p Hi -m " + shell_quote(dir.path())).exit_code, 0);

  // --no-tokenizer writes weights and configs only: the folder's tokenizer stays.
  ASSERT_EQ(run_glass("random-model --like demo --seed 5 --force --no-tokenizer" + out).exit_code, 0);
  EXPECT_TRUE(file_exists(dir.file("tokenizer.json")));
  EXPECT_NE(test::read_string(dir.file("model.safetensors")), test::read_string(fresh.file("model.safetensors")));
}

}  // namespace
}  // namespace glass
