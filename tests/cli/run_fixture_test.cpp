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

std::vector<Json> json_lines(const std::string& out) {
  std::vector<Json> lines;
  size_t pos = 0;
  while (pos < out.size()) {
    const size_t nl = out.find('\n', pos);
    lines.push_back(Json::parse(out.substr(pos, nl - pos)));
    pos = nl == std::string::npos ? out.size() : nl + 1;
  }
  return lines;
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
      expect_greedy_matches(c, json_lines(r.out).back());
      batch_args += " --ids '" + ids_arg(c["ids"]) + "'";
    }
    const auto batch = test::run_glass("run -m " + test::shell_quote(dir_) + batch_args + " -n 24 --greedy --format json");
    ASSERT_EQ(batch.exit_code, 0) << batch.err;
    const auto lines = json_lines(batch.out);
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
  ::testing::InitGoogleTest(&argc, argv);
  const auto dirs = glass::test::fixture_dirs_with("golden.json");
  if (dirs.empty()) {
    std::fprintf(stderr, "no model fixtures (folders with golden.json) under %s\n", glass::test::fixtures_root().c_str());
    return 1;
  }
  for (const auto& dir : dirs) {
    const std::string name = dir.substr(dir.find_last_of('/') + 1);
    ::testing::RegisterTest("GreedyRun", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [dir]() -> ::testing::Test* { return new glass::GreedyRun(dir); });
  }
  return RUN_ALL_TESTS();
}
