// The progress bar's line: fills with the fraction, fits the width, survives odd input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <string>

#include "cli/progress.h"

namespace glass::cli {
namespace {

TEST(Progress, HugePagesFromSmapsRollup) {
  const std::string rollup =
      "55d0c0a00000-7ffd2c5f1000 ---p 00000000 00:00 0                          [rollup]\n"
      "Rss:              980000 kB\n"
      "AnonHugePages:    933888 kB\n"
      "ShmemPmdMapped:        0 kB\n";
  EXPECT_EQ(anon_huge_page_bytes_of(rollup), size_t{933888} * 1024);
  EXPECT_EQ(anon_huge_page_bytes_of("AnonHugePages:        0 kB"), size_t{0});  // no newline at the end
  // Missing, truncated, lying or oversized: no figure rather than a wrong one.
  EXPECT_EQ(anon_huge_page_bytes_of(""), std::nullopt);
  EXPECT_EQ(anon_huge_page_bytes_of("Rss: 12 kB\nShmemPmdMapped: 0 kB\n"), std::nullopt);
  EXPECT_EQ(anon_huge_page_bytes_of("AnonHugePages:"), std::nullopt);
  EXPECT_EQ(anon_huge_page_bytes_of("AnonHugePages:    12"), std::nullopt);
  EXPECT_EQ(anon_huge_page_bytes_of("AnonHugePages:    -12 kB"), std::nullopt);
  EXPECT_EQ(anon_huge_page_bytes_of("AnonHugePages:    12 MB"), std::nullopt);
  EXPECT_EQ(anon_huge_page_bytes_of("AnonHugePages:    99999999999999999999999 kB"), std::nullopt);
  EXPECT_EQ(anon_huge_page_bytes_of("AnonHugePages:    18014398509481984 kB"), std::nullopt);  // 2^54 KiB: past size_t in bytes
  // This process: a figure wherever the file is there (0 is a figure too).
  if (std::ifstream("/proc/self/smaps_rollup")) {
    EXPECT_TRUE(huge_page_bytes().has_value());
  }
}

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
