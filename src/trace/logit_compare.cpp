#include "trace/logit_compare.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace glass {

namespace {

// log-sum-exp in double, ignoring -inf entries.
double log_sum_exp(std::span<const float> x, double max) {
  double s = 0;
  for (float v : x) s += std::exp(static_cast<double>(v) - max);
  return max + std::log(s);
}

}  // namespace

RowComparison compare_row(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size() || a.empty()) fail("compare: rows differ in length (", a.size(), " vs ", b.size(), ")");
  RowComparison r;
  double diff2 = 0, norm2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(b[i]) - a[i];
    if (std::isfinite(d)) {
      r.max_abs_diff = std::max(r.max_abs_diff, std::fabs(d));
      diff2 += d * d;
    }
    if (std::isfinite(a[i])) norm2 += static_cast<double>(a[i]) * a[i];
  }
  r.rel_error = norm2 > 0 ? std::sqrt(diff2 / norm2) : 0;
  r.top1_a = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
  r.top1_b = static_cast<int32_t>(std::max_element(b.begin(), b.end()) - b.begin());
  r.top1_agree = r.top1_a == r.top1_b;
  const double lse_a = log_sum_exp(a, a[r.top1_a]);
  const double lse_b = log_sum_exp(b, b[r.top1_b]);
  double kl = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double la = a[i] - lse_a;
    if (!std::isfinite(la)) continue;
    const double pa = std::exp(la);
    kl += pa * (la - (b[i] - lse_b));
  }
  r.kl = std::max(0.0, kl);
  return r;
}

LogitComparison compare_logits(std::span<const float> a, std::span<const float> b, int64_t width) {
  if (width <= 0 || a.size() % static_cast<size_t>(width) != 0)
    fail("compare: ", a.size(), " values are not a whole number of rows of ", width);
  if (a.size() != b.size()) fail("compare: ", a.size(), " values vs ", b.size());
  LogitComparison c;
  const size_t rows = a.size() / static_cast<size_t>(width);
  size_t agree = 0;
  for (size_t r = 0; r < rows; ++r) {
    const auto w = static_cast<size_t>(width);
    RowComparison row = compare_row(a.subspan(r * w, w), b.subspan(r * w, w));
    c.max_abs_diff = std::max(c.max_abs_diff, row.max_abs_diff);
    c.max_kl = std::max(c.max_kl, row.kl);
    c.mean_kl += row.kl;
    agree += row.top1_agree;
    c.rows.push_back(row);
  }
  if (rows > 0) {
    c.mean_kl /= static_cast<double>(rows);
    c.top1_agreement = static_cast<double>(agree) / static_cast<double>(rows);
  }
  return c;
}

}  // namespace glass
