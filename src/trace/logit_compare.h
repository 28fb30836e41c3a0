// Comparing two sets of logits row by row: how far apart, and whether they choose
// the same token. Used by `glass compare`, the quantization report and tests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace glass {

struct RowComparison {
  double max_abs_diff = 0;  // max_i |b_i - a_i|
  double rel_error = 0;     // ||b - a|| / ||a||
  double kl = 0;            // KL(softmax(a) || softmax(b)) in nats
  bool top1_agree = false;  // argmax a == argmax b
  int32_t top1_a = -1, top1_b = -1;
};

struct LogitComparison {
  std::vector<RowComparison> rows;
  double max_abs_diff = 0;  // over all rows
  double mean_kl = 0;
  double max_kl = 0;
  double top1_agreement = 0;  // fraction of rows
};

// `a` is the reference; both are [rows, width] row-major.
RowComparison compare_row(std::span<const float> a, std::span<const float> b);
LogitComparison compare_logits(std::span<const float> a, std::span<const float> b, int64_t width);

}  // namespace glass
