// The glass binary at the edges of its input (issue 15 items 6, 7, 8 and 10): outputs
// that are links or special files, thread counts the machine cannot run, config values and
// server sizes whose products overflow, FIFOs and devices where a file should be.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/error.h"
#include "kernels/thread_pool.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::run_command;
using test::run_glass;
using test::shell_quote;
using test::TempDir;

// A ulimit on address space for commands that an unfixed binary would run away with
// (threads past the machine, reading /dev/zero): it then fails, not the shared host.
// ASan reserves terabytes of shadow memory, so a sanitized binary runs without it.
#if defined(__SANITIZE_ADDRESS__)
const std::string kMemoryLimit = "";
#else
const std::string kMemoryLimit = "ulimit -v 4000000; ";
#endif

// `glass args` under kMemoryLimit and a timeout, as a shell command. KILL follows TERM
// after 5 s: glass serve blocks SIGTERM in every thread until its waiter runs.
std::string bounded_command(const std::string& args, int seconds = 60) {
  return str_cat("(", kMemoryLimit, "timeout -k 5 ", seconds, " ", shell_quote(test::glass_binary()), " ", args, ")");
}
test::CommandResult run_bounded(const std::string& args, int seconds = 60) {
  return run_command(bounded_command(args, seconds));
}

// A command that must end with a clear error: exit status 1 (glass::Error), not a crash
// (signal), an internal error (2) or a hang (124 from `timeout`).
void expect_clear_error(const test::CommandResult& r, const std::string& in_message, const std::string& what) {
  EXPECT_EQ(r.exit_code, 1) << what << "\n" << r.err;
  EXPECT_NE(r.err.find(in_message), std::string::npos) << what << "\n" << r.err;
}

// Issue 15 item 6: `glass logits --out LINK` replaced the symlink with a regular file.
TEST(CliBounds, LogitsOutputFollowsASymlink) {
  TempDir tmp;
  const std::string target = tmp.file("logits.f32");
  const std::string link = tmp.file("link.f32");
  test::write_string(target, "");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const auto r = run_glass("logits --ids '9707 11' --out " + shell_quote(link));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink was replaced by a file";
  EXPECT_EQ(test::read_f32_file(target).size(), 151936u);
}

// Issue 15 item 6: a FIFO (the report's case was /dev/full, a device) given as --out was
// replaced by a regular file; it is written through and stays a FIFO.
TEST(CliBounds, LogitsOutputToAFifoIsWrittenThrough) {
  TempDir tmp;
  const std::string fifo = tmp.file("logits.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A reader that gives up after a while, so an unfixed binary (which renames a file over
  // the FIFO and never opens it) fails the test instead of hanging it.
  const auto r = run_command("(timeout 30 cat " + shell_quote(fifo) + " > " + shell_quote(tmp.file("got.f32")) + " &) ; " +
                             shell_quote(test::glass_binary()) + " logits --ids '9707 11' --out " + shell_quote(fifo) +
                             "; status=$?; sleep 1; exit $status");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced by a file";
  EXPECT_EQ(test::read_f32_file(tmp.file("got.f32")).size(), 151936u);
  // Standard output into a pipe through a link, as --out /dev/stdout: a chain to the magic
  // link /proc/self/fd/1 -> "pipe:[...]", written through. (A link of our own, not
  // /dev/stdout itself: an unfixed binary running as root replaces what it is given.)
  const std::string out_link = tmp.file("stdout.link");
  ASSERT_EQ(::symlink("/proc/self/fd/1", out_link.c_str()), 0);
  const auto piped =
      run_command(shell_quote(test::glass_binary()) + " logits --ids 9707 --out " + shell_quote(out_link) + " | wc -c");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(std::stoll(piped.out), 151936 * 4) << piped.err;
}

// Issue 15 item 5: the embedding's padding rows past the tokenizer (151665..151935 for
// Qwen2.5) were drawn; here the model's argmax by far is padding row 151900.
TEST(CliBounds, PaddingRowsPastTheTokenizerAreNeverDrawn) {
  TempDir tmp;
  test::write_constant_token_model(tmp.path(), 151900);
  for (const std::string flags : {"--greedy", "--sample --temperature 1 --top-k 0 --seed 3", "--temperature 1e-300"}) {
    const auto r = run_glass("run -m " + shell_quote(tmp.path()) + " --ids 9707 -n 6 --ignore-eos --format json " + flags);
    ASSERT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
    const Json j = test::json_lines(r.out).back();
    ASSERT_EQ(j["ids"].size(), 6u) << flags;
    for (const Json& id : j["ids"]) EXPECT_LT(id.get<int64_t>(), 151665) << flags;
  }
}

// Issue 15 item 5: --temperature 1e-300 became 0 as a float (logits / 0); below 1e-5 the
// CLI decodes greedily, as the server does.
TEST(CliBounds, TinyTemperaturesAreGreedy) {
  const std::string run = "run -p 'Once upon a time' -n 12 --ignore-eos --format json --seed 9 ";
  const auto greedy = run_glass(run + "--temperature 0");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  for (const char* t : {"1e-300", "5e-324", "9e-6"}) {
    const auto r = run_glass(run + "--temperature " + t);
    ASSERT_EQ(r.exit_code, 0) << t << "\n" << r.err;
    EXPECT_EQ(test::json_lines(r.out).back()["ids"], test::json_lines(greedy.out).back()["ids"]) << t;
  }
  // Past the range: a clear error naming it.
  expect_clear_error(run_glass(run + "--temperature 1e999"), "temperature", "--temperature 1e999");
}

// Issue 15 item 7: --threads 2147483647 aborted (thread creation failed in the pool's
// constructor with threads still joinable) and 1000 threads on 2 CPUs ran 800x slower.
TEST(CliBounds, ThreadCountsAreBoundedByTheMachine) {
  const int cpus = ThreadPool::hardware_threads();
  for (const std::string& n : {std::string("2147483647"), std::string("1000"), std::to_string(cpus + 1)}) {
    const auto r = run_bounded("run -p Hi -n 1 --threads " + n);
    expect_clear_error(r, "--threads", "--threads " + n);
    EXPECT_NE(r.err.find(std::to_string(cpus)), std::string::npos) << "names what the machine has: " << r.err;
  }
  EXPECT_EQ(run_glass("run -p Hi -n 1 --threads " + std::to_string(cpus)).exit_code, 0);
}

// Issue 15 item 8: inspect printed wrapped parameter counts and "0 bytes for
// 4611686018427387904 tokens"; values past the bounds are refused naming the field.
TEST(CliBounds, InspectRefusesConfigValuesPastTheirBounds) {
  TempDir tmp;
  for (const auto& [field, value] : {std::pair<const char*, int64_t>{"max_position_embeddings", int64_t{1} << 62},
                                     {"num_hidden_layers", int64_t{1} << 40},
                                     {"hidden_size", int64_t{1} << 33}}) {
    Json config = test::published_config("Qwen3-8B");
    config[field] = value;
    test::write_string(tmp.file("config.json"), config.dump());
    const auto r = run_bounded("inspect -m " + shell_quote(tmp.file("config.json")));  // 2^40 layers looped
    expect_clear_error(r, str_cat("\"", field, "\""), field);
    EXPECT_NE(r.err.find("at most"), std::string::npos) << r.err;
  }
}

// Issue 15 item 8: --kv-budget-mb and --parallel overflowed the budget arithmetic ("holds
// -1024 tokens"); each has a range, checked before the model loads.
TEST(CliBounds, ServeSizesHaveRanges) {
  const std::pair<std::string, std::string> cases[] = {
      {"--kv-budget-mb 9223372036854775807", "--kv-budget-mb"},
      {"--kv-budget-mb 8796093022208", "--kv-budget-mb"},
      {"--parallel 9223372036854775807", "--parallel"},
      {"--parallel 100000", "--parallel"},
      {"--queue 100000000", "--queue"},
      {"--max-body-mb 9223372036854775807", "--max-body-mb"},
      {"--prefill-chunk 9223372036854775807", "--prefill-chunk"},
  };
  for (const auto& [flags, name] : cases) {
    // Unfixed, --parallel and --queue started that many HTTP threads.
    const auto r = run_bounded("serve --port 0 " + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_LT(r.exit_code, 124) << flags << ": crashed or hung\n" << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << flags << "\n" << r.err;
    EXPECT_EQ(r.err.find("-1024"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("listening"), std::string::npos) << flags << ": the server started\n" << r.err;
  }
}

// Issue 15 item 10: a FIFO as config.json blocked the loader; /dev/zero as --messages
// was read without limit (memory is capped here so the unfixed binary fails, not the host).
TEST(CliBounds, SpecialFilesWhereAFileIsExpectedAreRefused) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo(tmp.file("config.json").c_str(), 0600), 0);
  auto r = run_bounded("inspect -m " + shell_quote(tmp.path()), 20);
  expect_clear_error(r, "not a regular file", "a FIFO config.json");
  r = run_bounded("chat-template --messages /dev/zero", 20);
  expect_clear_error(r, "/dev/zero: not a regular file", "--messages /dev/zero");
  r = run_bounded("chat-template --messages " + shell_quote(tmp.file("config.json")), 20);
  expect_clear_error(r, "not a regular file", "--messages FIFO");
  // stdin is read up to the same cap as a file.
  r = run_command(str_cat("head -c 100000000 /dev/zero | ", bounded_command("chat-template", 20)));
  expect_clear_error(r, "stdin", "100 MB on stdin");
  EXPECT_NE(r.err.find("limit"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace glass
