// `glass run --greedy` on every fixture model reproduces the golden greedy
// continuation wherever the golden top-2 margin is above 1e-3, alone and batched.
#include <gtest/gtest.h>

#include "base/json_fields.h"
#include "support/test_support.h"

namespace glass {
namespace {

std::string ids_arg(const Json& ids) {
  std::string s;
  for (const Json& id : ids) {
    if (!s.empty()) s += ' ';
    s += std::to_string(id.get<int64_t>());
  }
  return s;
}

void expect_greedy_matches(const Json& golden_case, const Json& got) {
  const auto expected = golden_case["greedy_new_ids"].get<std::vector<int32_t>>();
  const auto margins = golden_case["greedy_margins"].get<std::vector<double>>();
  const auto ids = got["ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(ids.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (margins[i] > 1e-3) {
      ASSERT_EQ(ids[i], expected[i]) << "step " << i << " (golden margin " << margins[i] << ")";
    } else if (ids[i] != expected[i]) {
      break;  // a near-tie went the other way; later steps are not comparable
    }
  }
}

class GreedyRun : public ::testing::Test {
 public:
  explicit GreedyRun(std::string dir) : dir_(std::move(dir)) {}
  void TestBody() override {
    const Json golden = read_json_file(dir_ + "/golden.json");
    std::string batch_args;
    for (const Json& c : golden["cases"]) {
      SCOPED_TRACE("case " + c["name"].get<std::string>());
      const auto r = test::run_glass("run -m " + test::shell_quote(dir_) + " --ids '" + ids_arg(c["ids"]) +
                                     "' -n 24 --greedy --format json");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      expect_greedy_matches(c, test::json_lines(r.out).back());
      batch_args += " --ids '" + ids_arg(c["ids"]) + "'";
    }
    const auto batch = test::run_glass("run -m " + test::shell_quote(dir_) + batch_args + " -n 24 --greedy --format json");
    ASSERT_EQ(batch.exit_code, 0) << batch.err;
    const auto lines = test::json_lines(batch.out);
    ASSERT_EQ(lines.size(), golden["cases"].size());
    for (size_t i = 0; i < lines.size(); ++i) {
      SCOPED_TRACE("batched case " + golden["cases"][i]["name"].get<std::string>());
      expect_greedy_matches(golden["cases"][i], lines[i]);
    }
  }

 private:
  std::string dir_;
};

}  // namespace
}  // namespace glass

int main(int argc, char** argv) {
  return glass::test::run_fixture_main(argc, argv, "golden.json", "GreedyRun",
                                       [](const std::string& dir) { return new glass::GreedyRun(dir); });
}
