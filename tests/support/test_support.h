// Shared helpers for glass tests: fixture discovery, temporary folders, running the CLI.
#pragma once

#include <functional>
#include <limits>
#include <optional>

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "base/json_fields.h"
#include "io/model_config.h"
#include "io/safetensors.h"

namespace glass::test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// GLASS_FIXTURES, or ../shared/fixtures beside the repository.
std::string fixtures_root();
// Sub-folders of the fixture root (sorted) that contain `marker` (e.g. "golden.json").
std::vector<std::string> fixture_dirs_with(const std::string& marker);
// Files matching `folder/*.json` under the fixture root (sorted).
std::vector<std::string> fixture_files(const std::string& folder, const std::string& extension = ".json");

std::string glass_binary();
std::string demo_model_dir();

// A fresh folder under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs a shell command line; stdout and stderr captured separately; optional stdin text.
CommandResult run_command(const std::string& command_line, const std::string& stdin_text = "");
// Runs build/glass with arguments (already shell-quoted where needed).
CommandResult run_glass(const std::string& args, const std::string& stdin_text = "");
std::string shell_quote(const std::string& s);
// Runs build/glass with arguments on a pseudo-terminal `columns` wide (stdin, stdout and
// stderr all the terminal, TERM=xterm), as a person at a terminal sees it: `out` holds
// everything written, both streams interleaved in order (with the terminal's \r\n line
// ends); `err` is empty.
CommandResult run_glass_in_terminal(const std::string& args, int columns = 100);
// Whether this machine can open a pseudo-terminal (a chroot or container without
// /dev/pts cannot): tests that need one skip, saying why, where it cannot.
bool pseudo_terminals_available();

// The config.json published with a checkpoint on Hugging Face, whole: "Qwen3-0.6B",
// "Qwen3-8B", "Qwen3-30B-A3B".
Json published_config(const std::string& name);

// A tiny valid Qwen2 config (vocab 128) for tests that write their own checkpoints.
ModelConfig tiny_config();
// Writes a random checkpoint of `config` into `dir` (config.json + model.safetensors).
void write_tiny_checkpoint(const std::string& dir, const ModelConfig& config, DType dtype = DType::BF16,
                           uint64_t seed = 7);

// The message of the glass::Error that `f` throws; fails the test (returns "") when it
// throws nothing or something else.
std::string thrown_error(const std::function<void()>& f);

// A checkpoint whose every next token is `token` (argmax by a wide margin): zero layer
// weights, a positive embedding and an lm_head with a single non-zero row. Vocabulary
// 151936 with the real Qwen2.5 tokenizer files copied from the demo model.
void write_constant_token_model(const std::string& dir, int32_t token);

// A checkpoint that follows each token of `next` (a pair: a token, then the one that
// follows it) with its follower, argmax by a wide margin, so that a run writes a chosen
// sequence from a prompt's last token on; every other token is followed by id 0. Zero
// layer weights (each position sees only its own token), at most 32 pairs, vocabulary
// 151936; the tokenizer files (tokenizer.json, tokenizer_config.json) are copied from
// `tokenizer_dir`.
void write_successor_model(const std::string& dir, const std::vector<std::pair<int32_t, int32_t>>& next,
                           const std::string& tokenizer_dir);

// The Qwen3 tokenizer and chat template: the tiny-qwen3 fixture folder.
std::string qwen3_tokenizer_dir();

// Each line of `out` parsed as JSON (a command's JSONL output).
std::vector<Json> json_lines(const std::string& out);

// The engine's refusal of a checkpoint folder (glass::Unsupported: an architecture or
// feature it does not implement), or nothing when it opens the folder or the folder is
// broken in another way.
std::optional<std::string> engine_refusal(const std::string& dir);

// Exit status of a test program's run skipped as a whole (ctest's SKIP_RETURN_CODE).
inline constexpr int kSkippedRun = 77;
// Whether this process may run on the CPU path GLASS_CPU names (CpuFeatures::detect); if not
// (a run of the suites on the emulated AMX tiles, GLASS_CPU=amx-emulated, where the CPU lacks
// AVX-512 BF16), says why on stderr: the caller exits with kSkippedRun.
bool cpu_path_available();

// main() of a fixture test over model folders: registers make_test(dir) as test
// `suite.<folder name>` for every fixture folder holding `marker`, and fails (exit 1)
// when there is none. A folder the engine refuses registers the same tests, each
// skipped with the refusal. Exits with kSkippedRun where !cpu_path_available().
int run_fixture_main(int argc, char** argv, const std::string& marker, const std::string& suite,
                     const std::function<::testing::Test*(const std::string& dir)>& make_test);

// The same for several suites, each registered per folder and variant (a backend, say)
// as `suite.<folder name>/<variant>`.
struct FixtureSuite {
  std::string suite;
  std::vector<std::string> variants;
  std::function<::testing::Test*(const std::string& dir, const std::string& variant)> make_test;
  // When set, the suite is registered only for folders it applies to (e.g. whose
  // golden.json has a field the test reads).
  std::function<bool(const std::string& dir)> applies = nullptr;
};
// A FixtureSuite::applies for folders whose `file` (JSON) has the top-level `field`.
std::function<bool(const std::string& dir)> json_has_field(const std::string& file, const std::string& field);
int run_fixture_main(int argc, char** argv, const std::string& marker, const std::vector<FixtureSuite>& suites);

std::vector<float> read_f32_file(const std::string& path);
// `s` as a GoogleTest name: every character but letters and digits becomes '_'.
std::string test_name(const std::string& s);
void write_string(const std::string& path, const std::string& text);
std::string read_string(const std::string& path);

}  // namespace glass::test
