// Round tick values for the rms chart of glass trace --html.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "trace/axis_ticks.h"

namespace glass {
namespace {

using Ticks = std::vector<double>;

TEST(AxisTicks, RoundStepsOfOneTwoOrFive) {
  // The page's rms axis ran 0 to 1.524 with ticks 0.381 / 0.761 / 1.14 / 1.52.
  EXPECT_EQ(nice_ticks(0, 1.524), (Ticks{0, 0.5, 1, 1.5}));
  EXPECT_EQ(nice_ticks(0, 1.08), (Ticks{0, 0.2, 0.4, 0.6, 0.8, 1}));
  EXPECT_EQ(nice_ticks(0, 250), (Ticks{0, 50, 100, 150, 200, 250}));
  EXPECT_EQ(nice_ticks(-3, 7), (Ticks{-2, 0, 2, 4, 6}));
  EXPECT_EQ(nice_ticks(1e-5, 5e-5), (Ticks{1e-5, 2e-5, 3e-5, 4e-5, 5e-5}));
  EXPECT_EQ(nice_ticks(0, 1.5, 4), (Ticks{0, 0.5, 1, 1.5})) << "an end on a tick is kept";
  EXPECT_EQ(nice_ticks(2, 2), (Ticks{2})) << "an empty range";
}

TEST(AxisTicks, EveryTickIsAMultipleOfOneStepInsideTheRange) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> exponent(-6, 6), unit(0, 1);
  for (int i = 0; i < 2000; ++i) {
    const double scale = std::pow(10.0, exponent(rng));
    const double lo = (unit(rng) - 0.3) * scale, hi = lo + (0.01 + unit(rng)) * scale;
    const Ticks t = nice_ticks(lo, hi);
    ASSERT_GE(t.size(), 2u) << lo << " " << hi;
    ASSERT_LE(t.size(), 6u) << lo << " " << hi;
    const double step = t[1] - t[0];
    const double decade = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    const double mantissa = step / decade;
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6)
        << "step " << step << " over [" << lo << ", " << hi << "]";
    for (size_t k = 0; k < t.size(); ++k) {
      EXPECT_GE(t[k], lo - 1e-9 * scale);
      EXPECT_LE(t[k], hi + 1e-9 * scale);
      EXPECT_NEAR(t[k] / step, std::round(t[k] / step), 1e-6) << "a multiple of the step";
      if (k > 0) {
        EXPECT_NEAR(t[k] - t[k - 1], step, 1e-9 * scale);
      }
    }
    // The next smaller round step (5 -> 2, 2 -> 1, 1 -> 0.5) would have given more than six.
    const double smaller = step / (std::abs(mantissa - 5) < 1e-6 ? 2.5 : 2);
    EXPECT_GT(std::floor(hi / smaller + 1e-9) - std::ceil(lo / smaller - 1e-9) + 1, 6)
        << "step " << step << " over [" << lo << ", " << hi << "] is not the smallest";
  }
}

TEST(AxisTicks, LogAxisAtPowersOfTenOrOneTwoFive) {
  EXPECT_EQ(nice_log_ticks(0.01, 100), (Ticks{0.01, 0.1, 1, 10, 100}));
  EXPECT_EQ(nice_log_ticks(0.003, 200), (Ticks{0.01, 0.1, 1, 10, 100}));
  EXPECT_EQ(nice_log_ticks(0.02, 1.5), (Ticks{0.02, 0.05, 0.1, 0.2, 0.5, 1})) << "two decades: 1, 2, 5";
  EXPECT_EQ(nice_log_ticks(0.02, 9), (Ticks{0.05, 0.1, 0.5, 1, 5})) << "1, 2, 5 would be eight";
  EXPECT_EQ(nice_log_ticks(1e-6, 1e6), (Ticks{1e-6, 1e-3, 1, 1e3, 1e6})) << "every third of 13 decades";
}

TEST(AxisTicks, LabelsAreShortDecimals) {
  EXPECT_EQ(tick_label(0.1 + 0.2), "0.3");
  EXPECT_EQ(tick_label(1.5), "1.5");
  EXPECT_EQ(tick_label(250), "250");
  EXPECT_EQ(tick_label(2e-5), "2e-05");
  EXPECT_EQ(tick_label(-0.0), "0");
  for (double v : nice_ticks(0, 1.524)) EXPECT_LE(tick_label(v).size(), 3u) << v;
}

}  // namespace
}  // namespace glass
