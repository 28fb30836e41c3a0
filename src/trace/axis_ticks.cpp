#include "trace/axis_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace glass {

namespace {

// m × 10^e, computed so that e.g. 3 × 10^-1 is the double nearest 0.3 (dividing by an
// exact power of ten, not multiplying by an inexact one).
double scaled(double m, int e) { return e >= 0 ? m * std::pow(10.0, e) : m / std::pow(10.0, -e); }

// The multiples k × m × 10^e in [lo, hi], a little slack for rounding at the ends.
std::vector<double> multiples_in(double lo, double hi, double m, int e) {
  const double step = scaled(m, e);
  const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
  std::vector<double> out;
  for (double k = first; k <= last; ++k) out.push_back(k == 0 ? 0.0 : scaled(k * m, e));
  return out;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  max_ticks = std::max(max_ticks, 2);
  // Start a decade below the step that would give max_ticks, and widen until it fits.
  for (int e = static_cast<int>(std::floor(std::log10((hi - lo) / max_ticks))) - 1;; ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double step = scaled(m, e);
      const double count = std::floor(hi / step + 1e-9) - std::ceil(lo / step - 1e-9) + 1;
      if (count <= max_ticks) return multiples_in(lo, hi, m, e);
    }
}

std::vector<double> nice_log_ticks(double lo, double hi, int max_ticks) {
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return {};
  max_ticks = std::max(max_ticks, 1);
  const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
  std::vector<double> powers;
  for (int e = first; e <= last; ++e) powers.push_back(scaled(1, e));
  if (powers.size() >= 3) {
    // Every n-th power when there are too many decades.
    const size_t every = (powers.size() + max_ticks - 1) / max_ticks;
    std::vector<double> out;
    for (size_t i = 0; i < powers.size(); i += every) out.push_back(powers[i]);
    return out;
  }
  for (const std::vector<double>& mantissas : {std::vector<double>{1, 2, 5}, std::vector<double>{1, 5}}) {
    std::vector<double> out;
    for (int e = first - 1; e <= last; ++e)
      for (double m : mantissas) {
        const double v = scaled(m, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
      }
    if (static_cast<int>(out.size()) <= max_ticks) return out;
  }
  return powers;
}

std::string tick_label(double v) {
  // Ticks are m × 10^k with m of one or two digits, so six significant digits name them
  // exactly and hide the rounding of the double.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v == 0 ? 0.0 : v);
  return buf;
}

}  // namespace glass
