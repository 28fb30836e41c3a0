// The progress bar's line: fills with the fraction, fits the width, survives odd input.
#include <gtest/gtest.h>

#include <cmath>

#include "cli/progress.h"

namespace glass::cli {
namespace {

TEST(Progress, LineFillsWithTheFraction) {
  EXPECT_EQ(progress_line("loading", 0.0, "", 34), "loading [>                  ]   0%");
  EXPECT_EQ(progress_line("loading", 0.5, "", 34), "loading [=========>         ]  50%");
  EXPECT_EQ(progress_line("loading", 1.0, "", 34), "loading [===================] 100%");
  EXPECT_EQ(progress_line("x", 0.999, "3 of 4", 30), "x [============>]  99%  3 of 4");
}

TEST(Progress, LineFitsTheWidthAndClampsOddFractions) {
  for (size_t width : {1u, 10u, 20u, 40u, 80u, 200u}) {
    const std::string line = progress_line("converting to q4_0", 0.3, "123.4 MiB of 942.3 MiB", width);
    EXPECT_LE(line.size(), width) << width;
  }
  // The bar is between 10 and 40 columns whatever the room.
  const std::string wide = progress_line("a", 0.25, "", 500);
  EXPECT_EQ(wide.size(), std::string("a [] ").size() + 40 + 4);
  EXPECT_EQ(progress_line("a", -3, "", 40), progress_line("a", 0, "", 40));
  EXPECT_EQ(progress_line("a", 7, "", 40), progress_line("a", 1, "", 40));
  EXPECT_EQ(progress_line("a", std::nan(""), "", 40), progress_line("a", 0, "", 40));
}

TEST(Progress, BarDrawsNothingWhenDisabled) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buffer, &size);
  {
    ProgressBar bar("loading", false, out);
    bar.update(1, 2);
    bar.clear();
  }
  std::fflush(out);
  EXPECT_EQ(size, 0u);
  {
    ProgressBar bar("loading", true, out);
    bar.update(1, 2, "half");
    bar.update(2, 2, "all");  // the last update draws even within the 100 ms
  }
  std::fclose(out);
  const std::string drawn(buffer, size);
  free(buffer);
  EXPECT_NE(drawn.find("\r\033[Kloading ["), std::string::npos);
  EXPECT_NE(drawn.find("half"), std::string::npos);
  EXPECT_NE(drawn.find("100%  all"), std::string::npos);
  EXPECT_TRUE(drawn.ends_with("\r\033[K"));  // erased when it goes
}

}  // namespace
}  // namespace glass::cli
