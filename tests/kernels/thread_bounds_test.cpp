// Thread counts the machine cannot run (issue 15 item 7): the pool's constructor let
// std::system_error escape with threads still joinable, so std::terminate aborted the
// process ("terminate called without an active exception").
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "base/error.h"
#include "kernels/backend.h"
#include "kernels/thread_pool.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::thrown_error;

TEST(ThreadBounds, ThePoolRefusesMoreThreadsThanItsMaximum) {
  const std::string e = thrown_error([] { ThreadPool pool(INT_MAX); });
  EXPECT_NE(e.find(std::to_string(INT_MAX)), std::string::npos) << e;
  EXPECT_NE(e.find("at most"), std::string::npos) << e;
  EXPECT_NE(thrown_error([] { ThreadPool pool(-3); }).find("-3"), std::string::npos);
}

TEST(ThreadBounds, TheBackendRefusesMoreThreadsThanTheMachineHas) {
  const int cpus = ThreadPool::hardware_threads();
  const std::string e = thrown_error([&] { Backend b("cpu", cpus + 1); });
  EXPECT_NE(e.find("--threads"), std::string::npos) << e;
  EXPECT_NE(e.find(std::to_string(cpus)), std::string::npos) << e;
  Backend all("cpu", 0);
  EXPECT_EQ(all.threads(), cpus);
  Backend most("cpu", cpus);
  EXPECT_EQ(most.threads(), cpus);
}

#if !defined(__SANITIZE_ADDRESS__)  // ASan reserves terabytes of shadow: RLIMIT_AS would stop it first
// A thread that cannot start (here: no address space left for its stack) is an error,
// and the threads already started are stopped and joined, not left to abort the process.
TEST(ThreadBoundsDeathTest, AThreadThatCannotStartIsAnError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ThreadPool warm(2);  // maps what the pool's code needs before the limit is set
        warm.run([](int) {});
        rlimit limit{};
        getrlimit(RLIMIT_AS, &limit);
        // The current size plus 64 MiB: a few 8 MiB thread stacks fit, 64 do not.
        long pages = 0;
        if (FILE* f = std::fopen("/proc/self/statm", "r")) {
          if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
          std::fclose(f);
        }
        limit.rlim_cur = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{64} << 20);
        setrlimit(RLIMIT_AS, &limit);
        try {
          ThreadPool pool(64);
        } catch (const Error& e) {
          std::fprintf(stderr, "refused: %s\n", e.what());
          std::_Exit(std::string(e.what()).find("thread") != std::string::npos ? 0 : 3);
        }
        std::_Exit(4);  // all 64 started: the limit did not bite
      },
      ::testing::ExitedWithCode(0), "refused");
}
#endif

}  // namespace
}  // namespace glass
