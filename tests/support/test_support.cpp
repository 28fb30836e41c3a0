#include "support/test_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "base/error.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "kernels/cpu_kernels.h"
#include "model/random_checkpoint.h"

namespace glass::test {

std::string fixtures_root() {
  const char* env = std::getenv("GLASS_FIXTURES");
  return env != nullptr && *env != '\0' ? env : GLASS_DEFAULT_FIXTURES;
}

namespace {

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

void remove_tree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    for (const auto& n : list_dir(path)) remove_tree(path + "/" + n);
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

}  // namespace

std::vector<std::string> fixture_dirs_with(const std::string& marker) {
  std::vector<std::string> out;
  const std::string root = fixtures_root();
  for (const auto& n : list_dir(root))
    if (exists(root + "/" + n + "/" + marker)) out.push_back(root + "/" + n);
  return out;
}

std::vector<std::string> fixture_files(const std::string& folder, const std::string& extension) {
  std::vector<std::string> out;
  const std::string dir = fixtures_root() + "/" + folder;
  for (const auto& n : list_dir(dir))
    if (n.size() > extension.size() && n.compare(n.size() - extension.size(), extension.size(), extension) == 0)
      out.push_back(dir + "/" + n);
  return out;
}

Json published_config(const std::string& name) {
  static constexpr std::pair<const char*, const char*> kConfigs[] = {
    {"Qwen3-0.6B", R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})"},
    {"Qwen3-8B", R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12288,
    "max_position_embeddings": 40960, "max_window_layers": 36, "model_type": "qwen3",
    "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})"},
    {"Qwen3-30B-A3B", R"({
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
    "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
    "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": true,
    "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
    "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06,
    "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
    "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 151936})"},
  };
  for (const auto& [n, text] : kConfigs)
    if (name == n) return parse_json(text, name + "/config.json");
  throw std::runtime_error("no published config named " + name);
}

std::string glass_binary() { return GLASS_BINARY; }
std::string demo_model_dir() { return GLASS_DEMO_MODEL_DIR; }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base != nullptr && *base ? base : "/tmp") + "/glass-test-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() { remove_tree(path_); }

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

CommandResult run_command(const std::string& command_line, const std::string& stdin_text) {
  TempDir tmp;
  const std::string in = tmp.file("stdin"), out = tmp.file("stdout"), err = tmp.file("stderr");
  write_string(in, stdin_text);
  const std::string full = "(" + command_line + ") <" + shell_quote(in) + " >" + shell_quote(out) + " 2>" + shell_quote(err);
  CommandResult r;
  int status = std::system(full.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = read_string(out);
  r.err = read_string(err);
  return r;
}

CommandResult run_glass(const std::string& args, const std::string& stdin_text) {
  return run_command(shell_quote(glass_binary()) + " " + args, stdin_text);
}

bool pseudo_terminals_available() {
  const int fd = posix_openpt(O_RDWR | O_NOCTTY);
  if (fd < 0) return false;
  close(fd);
  return true;
}

CommandResult run_glass_in_terminal(const std::string& args, int columns) {
  struct winsize size {};
  size.ws_row = 40;
  size.ws_col = static_cast<unsigned short>(columns);
  const std::string command = shell_quote(glass_binary()) + " " + args;
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    setenv("TERM", "xterm", 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  CommandResult r;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(master, buffer, sizeof buffer);
    if (n > 0) {
      r.out.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO once the child side closes
    }
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

ModelConfig tiny_config() {
  ModelConfig c;
  c.hidden_size = 32;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 64;
  c.vocab_size = 128;
  c.max_position_embeddings = 256;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = true;
  return c;
}

void write_tiny_checkpoint(const std::string& dir, const ModelConfig& config, DType dtype, uint64_t seed) {
  RandomCheckpointOptions o;
  o.dtype = dtype;
  o.seed = seed;
  write_random_checkpoint(config, dir, o);
}

std::string thrown_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected glass::Error, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected glass::Error, nothing was thrown";
  return "";
}

void write_constant_token_model(const std::string& dir, int32_t token) {
  ModelConfig c = tiny_config();
  c.vocab_size = 151936;
  c.tie_word_embeddings = false;
  write_random_checkpoint(c, dir, {DType::F32, 1});
  SafetensorsFile f(dir + "/model.safetensors");
  std::vector<std::vector<float>> storage;
  std::vector<TensorToWrite> ts;
  for (const auto& [name, t] : f.tensors()) {
    std::vector<float> v(t.nbytes / 4);
    std::memcpy(v.data(), t.data, t.nbytes);
    const bool matrix = t.shape.size() == 2;
    if (name == "model.embed_tokens.weight") {
      for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0f + 0.01f * static_cast<float>(i % 7);
    } else if (name == "lm_head.weight") {
      std::fill(v.begin(), v.end(), 0.0f);
      std::fill(v.begin() + static_cast<long>(token) * c.hidden_size, v.begin() + (token + 1) * c.hidden_size, 1.0f);
    } else if (name.find("norm") != std::string::npos) {
      std::fill(v.begin(), v.end(), 1.0f);
    } else if (matrix || name.find("bias") != std::string::npos) {
      std::fill(v.begin(), v.end(), 0.0f);
    }
    storage.push_back(std::move(v));
    ts.push_back({name, DType::F32, t.shape, storage.back().data(), t.nbytes});
  }
  write_safetensors(dir + "/model.safetensors.new", ts);
  std::rename((dir + "/model.safetensors.new").c_str(), (dir + "/model.safetensors").c_str());
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
    write_string(dir + "/" + name, read_string(demo_model_dir() + "/" + name));
}

void write_successor_model(const std::string& dir, const std::vector<std::pair<int32_t, int32_t>>& next,
                           const std::string& tokenizer_dir) {
  ModelConfig c = tiny_config();
  c.vocab_size = 151936;
  c.tie_word_embeddings = false;
  if (next.size() > static_cast<size_t>(c.hidden_size)) throw std::runtime_error("write_successor_model: too many pairs");
  write_random_checkpoint(c, dir, {DType::F32, 1});
  SafetensorsFile f(dir + "/model.safetensors");
  std::vector<std::vector<float>> storage;
  std::vector<TensorToWrite> ts;
  for (const auto& [name, t] : f.tensors()) {
    std::vector<float> v(t.nbytes / 4);
    std::memcpy(v.data(), t.data, t.nbytes);
    const bool matrix = t.shape.size() == 2;
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
      // Pair k: its token's embedding is unit vector k, its follower's lm_head row reads it.
      std::fill(v.begin(), v.end(), 0.0f);
      const bool embedding = name == "model.embed_tokens.weight";
      for (size_t k = 0; k < next.size(); ++k) {
        const int64_t row = embedding ? next[k].first : next[k].second;
        v[static_cast<size_t>(row * c.hidden_size) + k] = embedding ? 1.0f : 10.0f;
      }
    } else if (name.find("norm") != std::string::npos) {
      std::fill(v.begin(), v.end(), 1.0f);
    } else if (matrix || name.find("bias") != std::string::npos) {
      std::fill(v.begin(), v.end(), 0.0f);
    }
    storage.push_back(std::move(v));
    ts.push_back({name, DType::F32, t.shape, storage.back().data(), t.nbytes});
  }
  write_safetensors(dir + "/model.safetensors.new", ts);
  std::rename((dir + "/model.safetensors.new").c_str(), (dir + "/model.safetensors").c_str());
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
    write_string(dir + "/" + name, read_string(tokenizer_dir + "/" + name));
}

std::string qwen3_tokenizer_dir() { return fixtures_root() + "/tiny-qwen3"; }

std::vector<Json> json_lines(const std::string& out) {
  std::vector<Json> lines;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    if (nl > pos) lines.push_back(Json::parse(out.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return lines;
}

std::optional<std::string> engine_refusal(const std::string& dir) {
  try {
    Checkpoint checkpoint(dir);
  } catch (const Unsupported& e) {
    return std::string(e.what());
  } catch (const Error&) {
    // Broken rather than refused: the tests themselves fail on it.
  }
  return std::nullopt;
}

std::function<bool(const std::string& dir)> json_has_field(const std::string& file, const std::string& field) {
  return [file, field](const std::string& dir) {
    try {
      return read_json_file(dir + "/" + file).contains(field);
    } catch (const Error&) {
      return true;  // unreadable: let the test report it
    }
  };
}

namespace {

// Stands in for every test of a folder the engine refuses: reported as skipped, with
// the refusal, so that a folder is never silently dropped nor counted as passing.
class RefusedFixture : public ::testing::Test {
 public:
  explicit RefusedFixture(std::string refusal) : refusal_(std::move(refusal)) {}
  void TestBody() override { GTEST_SKIP() << refusal_; }

 private:
  std::string refusal_;
};

}  // namespace

bool cpu_path_available() {
  try {
    (void)CpuFeatures::detect();
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "skipped: %s\n", e.what());
    return false;
  }
}

int run_fixture_main(int argc, char** argv, const std::string& marker, const std::vector<FixtureSuite>& suites) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!cpu_path_available()) return kSkippedRun;
  const auto dirs = fixture_dirs_with(marker);
  if (dirs.empty()) {
    std::fprintf(stderr, "no fixture folders with %s under %s\n", marker.c_str(), fixtures_root().c_str());
    return 1;
  }
  for (const auto& dir : dirs) {
    const std::string folder = dir.substr(dir.find_last_of('/') + 1);
    const std::optional<std::string> refusal = engine_refusal(dir);
    for (const FixtureSuite& s : suites) {
      if (s.applies && !s.applies(dir)) continue;
      for (const std::string& variant : s.variants) {
        const std::string name = variant.empty() ? folder : folder + "/" + variant;
        ::testing::RegisterTest(s.suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                                [make = s.make_test, dir, variant, refusal]() -> ::testing::Test* {
                                  if (refusal) return new RefusedFixture(*refusal);
                                  return make(dir, variant);
                                });
      }
    }
  }
  return RUN_ALL_TESTS();
}

int run_fixture_main(int argc, char** argv, const std::string& marker, const std::string& suite,
                     const std::function<::testing::Test*(const std::string& dir)>& make_test) {
  return run_fixture_main(argc, argv, marker,
                          {{suite, {""}, [make_test](const std::string& dir, const std::string&) { return make_test(dir); }}});
}

std::vector<float> read_f32_file(const std::string& path) {
  const std::string bytes = read_string(path);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

void write_string(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string read_string(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string test_name(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace glass::test
