// Round numbers for chart axes (the rms curves of glass trace --html): 0 / 0.5 / 1 / 1.5,
// never 0.381 / 0.761 / 1.14.
#pragma once

#include <string>
#include <vector>

namespace glass {

// The multiples of the step that lie in [lo, hi], the step the smallest of 1, 2 or 5
// × 10^k that makes at most `max_ticks` of them. Ascending; {lo} when hi <= lo.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks = 6);

// Ticks for a logarithmic axis over [lo, hi] (0 < lo < hi): the powers of ten inside when
// there are at least three, else 1, 2 and 5 × 10^k (or fewer of those, to keep within
// `max_ticks`). Ascending; may be empty when no power of ten lies inside.
std::vector<double> nice_log_ticks(double lo, double hi, int max_ticks = 6);

// A tick's label: the shortest decimal that names it ("0.5", "1", "1.5", "2e-05").
std::string tick_label(double v);

}  // namespace glass
