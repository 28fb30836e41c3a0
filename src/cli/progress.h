// Progress bars on stderr for what takes seconds: loading and converting weights, long
// prompts. Drawn only on a terminal (a pipe or a log file gets none) and not with
// --quiet; they observe and never change what is computed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace glass::cli {

// Whether progress bars are drawn: stderr is a terminal that can erase a line, and the
// user did not ask for quiet.
bool progress_wanted(bool quiet);

// One line of a bar, at most `width` columns: "loading  [=========>          ] 45%  detail".
std::string progress_line(const std::string& label, double fraction, const std::string& detail, size_t width);

// The peak resident memory of this process so far (getrusage's high-water mark).
size_t peak_rss_bytes();
// This process's anonymous memory in 2 MiB pages now (transparent huge pages, which the
// weights glass lays out ask for), from /proc/self/smaps_rollup; nullopt where that file or
// its AnonHugePages line is missing.
std::optional<size_t> huge_page_bytes();
// The AnonHugePages line of a smaps_rollup text ("AnonHugePages:    98304 kB"), in bytes.
std::optional<size_t> anon_huge_page_bytes_of(std::string_view smaps_rollup);
// "4.1 GiB (weights 3.9 GiB, KV cache 24.0 MiB, other 190 MiB)": a peak and its parts,
// other being the rest of it; no KV cache part without `kv_cache`.
std::string peak_memory_text(size_t peak, size_t weights, std::optional<size_t> kv_cache);

class ProgressBar {
 public:
  // Draws nothing unless `enabled`.
  ProgressBar(std::string label, bool enabled, FILE* out = stderr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Redraws with `done` of `total`, at most ten times a second (and always at the end).
  void update(double done, double total, const std::string& detail = "");
  // Erases the bar's line, so what follows starts on a clean one; update() draws again.
  void clear();
  bool enabled() const { return enabled_; }

 private:
  std::string label_;
  bool enabled_;
  FILE* out_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace glass::cli
