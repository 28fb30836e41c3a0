// `glass serve` started in the background through the shell (so that environment
// assignments can lead the command line), for CLI tests that talk to it; stopped with
// SIGTERM when the object goes.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "support/test_support.h"

namespace glass::test {

class BackgroundServe {
 public:
  // Runs `env glass serve args --port 0`; waits up to 10 s for the line that names the port.
  BackgroundServe(const std::string& env, const std::string& args) {
    const std::string cmd = env + " " + shell_quote(glass_binary()) + " serve " + args + " --port 0 2>" +
                            shell_quote(dir_.file("err")) + " & echo $! >" + shell_quote(dir_.file("pid"));
    if (std::system(cmd.c_str()) != 0) return;
    pid_ = static_cast<pid_t>(std::stol(read_string(dir_.file("pid"))));
    const std::string announce = "listening on http://127.0.0.1:";
    for (int i = 0; i < 200; ++i) {
      const std::string text = log();
      if (const size_t at = text.find(announce); at != std::string::npos) {
        port_ = std::stoi(text.substr(at + announce.size()));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~BackgroundServe() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
  }
  BackgroundServe(const BackgroundServe&) = delete;
  BackgroundServe& operator=(const BackgroundServe&) = delete;

  // 0 when it never said it was listening.
  int port() const { return port_; }
  // What it wrote on stderr so far.
  std::string log() const { return read_string(dir_.file("err")); }

 private:
  TempDir dir_;
  pid_t pid_ = 0;
  int port_ = 0;
};

}  // namespace glass::test
