#include "fuzz_support.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

namespace glass::fuzz {

void finding(const std::string& what) {
  std::fprintf(stderr, "==glass-fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

void uncaught(const std::exception* e) {
  if (e == nullptr) finding("an exception of unknown type escaped (not a glass::Error)");
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(*e).name(), nullptr, nullptr, &status),
                                              std::free);
  finding(str_cat("uncaught ", status == 0 && name ? name.get() : typeid(*e).name(),
                  " (not a glass::Error): ", e->what()));
}

namespace {

std::string tokenizer_dir() {
  const char* env = std::getenv("GLASS_FUZZ_TOKENIZER_DIR");
  return env != nullptr && *env != '\0' ? env : GLASS_FUZZ_TOKENIZER_DIR;
}

// A broken setup (fixed inputs that do not load, no scratch file), not a finding.
[[noreturn]] void setup_failure(const std::string& what) {
  std::fprintf(stderr, "glass-fuzz: %s\n", what.c_str());
  std::exit(2);
}

template <class T, class F>
T load_or_exit(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    setup_failure(str_cat("cannot load the ", what, ": ", e.what()));
  }
}

std::map<std::string, std::string>& scratch_files() {
  static auto* files = new std::map<std::string, std::string>();
  return *files;
}

void remove_scratch_files() {
  for (const auto& [suffix, path] : scratch_files()) ::unlink(path.c_str());
}

}  // namespace

const Tokenizer& qwen_tokenizer() {
  static const Tokenizer t = load_or_exit<Tokenizer>("tokenizer", [] { return Tokenizer::load(tokenizer_dir()); });
  return t;
}

const ChatTemplate& qwen_chat_template() {
  static const ChatTemplate t =
      load_or_exit<ChatTemplate>("chat template", [] { return ChatTemplate::from_checkpoint(tokenizer_dir()); });
  return t;
}

const std::string& scratch_path(const char* suffix) {
  auto& files = scratch_files();
  auto it = files.find(suffix);
  if (it != files.end()) return it->second;
  if (files.empty()) std::atexit(remove_scratch_files);
  const char* tmp = std::getenv("TMPDIR");
  std::string path = str_cat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/glass-fuzz-", ::getpid(), suffix);
  return files.emplace(suffix, std::move(path)).first->second;
}

void write_scratch(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) setup_failure(str_cat("cannot create ", path));
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) setup_failure(str_cat("cannot write ", path));
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

}  // namespace glass::fuzz
