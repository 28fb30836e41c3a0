#include "cli/progress.h"

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/error.h"

namespace glass::cli {

bool progress_wanted(bool quiet) {
  if (quiet || ::isatty(STDERR_FILENO) == 0) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

std::string progress_line(const std::string& label, double fraction, const std::string& detail, size_t width) {
  if (!(fraction >= 0)) fraction = 0;  // NaN too
  fraction = std::min(fraction, 1.0);
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(std::floor(fraction * 100)));
  // label, " [", bar, "] ", percent, "  ", detail: the bar takes what is left, 10 to 40.
  const size_t fixed = label.size() + 2 + 2 + std::strlen(percent) + (detail.empty() ? 0 : 2 + detail.size());
  const size_t bar = std::clamp<size_t>(width > fixed ? width - fixed : 0, 10, 40);
  const auto filled = static_cast<size_t>(fraction * static_cast<double>(bar));
  std::string line = label + " [";
  line.append(filled, '=');
  if (filled < bar) {
    line += '>';
    line.append(bar - filled - 1, ' ');
  }
  line += "] ";
  line += percent;
  if (!detail.empty()) line += "  " + detail;
  if (line.size() > width && width > 0) line.resize(width);
  return line;
}

size_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<size_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

std::optional<size_t> anon_huge_page_bytes_of(std::string_view smaps_rollup) {
  constexpr std::string_view kField = "AnonHugePages:";
  size_t at = 0;
  while (at < smaps_rollup.size()) {
    const size_t end = std::min(smaps_rollup.find('\n', at), smaps_rollup.size());
    std::string_view line = smaps_rollup.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(kField)) continue;
    line.remove_prefix(kField.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    size_t kib = 0;
    const auto [rest, error] = std::from_chars(line.data(), line.data() + line.size(), kib);
    if (error != std::errc{} || std::string_view(rest, line.data() + line.size()) != " kB" ||
        kib > std::numeric_limits<size_t>::max() / 1024)
      return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

std::optional<size_t> huge_page_bytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return anon_huge_page_bytes_of(text.str());
}

std::string peak_memory_text(size_t peak, size_t weights, std::optional<size_t> kv_cache) {
  const size_t kv = kv_cache.value_or(0);
  const size_t other = peak > weights + kv ? peak - weights - kv : 0;
  std::string text = str_cat(format_bytes(static_cast<double>(peak)), " (weights ", format_bytes(static_cast<double>(weights)));
  if (kv_cache) text += str_cat(", KV cache ", format_bytes(static_cast<double>(kv)));
  return text + str_cat(", other ", format_bytes(static_cast<double>(other)), ")");
}

namespace {

size_t terminal_width(FILE* out) {
  struct winsize ws {};
  if (::ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

ProgressBar::ProgressBar(std::string label, bool enabled, FILE* out)
    : label_(std::move(label)), enabled_(enabled), out_(out) {}

ProgressBar::~ProgressBar() { clear(); }

void ProgressBar::update(double done, double total, const std::string& detail) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = done >= total;
  if (drawn_ && !last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  // One column short of the width: a line that fills the last column wraps on some terminals.
  const std::string line = progress_line(label_, total > 0 ? done / total : 1.0, detail, terminal_width(out_) - 1);
  std::fprintf(out_, "\r\033[K%s", line.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace glass::cli
