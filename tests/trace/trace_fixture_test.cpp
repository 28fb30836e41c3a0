// glass trace against every fixture model's golden trace (a float64 transformers
// forward): the JSON reproduces rms and first 8 values after the embedding, each layer
// and the final norm; the lens at the last layer is the model's logits; the .npy dump
// loads in numpy and equals the JSON. Cases are discovered at run time.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "base/json_fields.h"
#include "support/test_support.h"

namespace glass {
namespace {

constexpr double kTol = 1e-4;

std::string python3() {
  struct stat st {};
  return ::stat("/usr/bin/python3", &st) == 0 ? "/usr/bin/python3" : "python3";
}

class GoldenTraceCli : public ::testing::Test {
 public:
  GoldenTraceCli(std::string dir, std::string backend) : dir_(std::move(dir)), backend_(std::move(backend)) {}

  void TestBody() override {
    const Json golden = read_json_file(dir_ + "/golden.json");
    const Json& trace = golden["trace"];
    const Json* c = nullptr;
    for (const Json& x : golden["cases"])
      if (x["name"] == trace["prompt"]) c = &x;
    ASSERT_NE(c, nullptr) << "trace prompt " << trace["prompt"] << " is not a case";
    std::string ids;
    for (const Json& id : (*c)["ids"]) {
      if (!ids.empty()) ids += ' ';
      ids += std::to_string(id.get<int64_t>());
    }
    const size_t n = (*c)["ids"].size();

    test::TempDir tmp;
    const std::string dump = tmp.file("dump");
    const auto r = test::run_glass("trace -m " + test::shell_quote(dir_) + " --ids " + test::shell_quote(ids) +
                                   " --kernels " + backend_ + " --format json --top-k 10 --dump " + test::shell_quote(dump));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = parse_json(r.out, "glass trace --format json");

    ASSERT_FALSE(trace["stages"].empty());
    for (const Json& g : trace["stages"]) {
      const std::string name = g["stage"];  // "embed", "layer0", ..., "final_norm"
      const Json* s = nullptr;
      for (const Json& x : j["stages"])
        if (x["name"] == name) s = &x;
      ASSERT_NE(s, nullptr) << "stage " << name << " is not in the JSON";
      if (name.rfind("layer", 0) == 0) {
        EXPECT_EQ((*s)["stage"], "output");
        EXPECT_EQ((*s)["layer"], std::stoi(name.substr(5)));
      } else {
        EXPECT_EQ((*s)["stage"], name);
      }
      ASSERT_EQ((*s)["per_position"]["rms"].size(), g["rms"].size()) << name;
      for (size_t p = 0; p < g["rms"].size(); ++p) {
        EXPECT_NEAR((*s)["per_position"]["rms"][p].get<double>(), g["rms"][p].get<double>(), kTol) << name << " rms at " << p;
        for (size_t i = 0; i < 8; ++i)
          EXPECT_NEAR((*s)["first"][p][i].get<double>(), g["first8"][p][i].get<double>(), kTol)
              << name << " value " << i << " at " << p;
      }
    }

    // The lens at the last layer is the model's own prediction, and that is the golden's.
    const Json& lens = j["logit_lens"];
    const int64_t layers = golden["config"]["num_hidden_layers"];
    ASSERT_EQ(lens["layers"].size(), static_cast<size_t>(layers));
    const Json& last = lens["layers"][layers - 1];
    EXPECT_EQ(last["name"], "layer" + std::to_string(layers - 1));
    ASSERT_TRUE(lens.contains("last_layer_max_abs_diff"));
    EXPECT_LE(lens["last_layer_max_abs_diff"].get<double>(), 1e-6);
    for (size_t p = 0; p < n; ++p) {
      ASSERT_EQ(last["top"][p].size(), 10u);
      for (size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(last["top"][p][i]["id"], lens["final"][p][i]["id"]) << "position " << p << " rank " << i;
        EXPECT_NEAR(last["top"][p][i]["prob"].get<double>(), lens["final"][p][i]["prob"].get<double>(), 1e-9);
        EXPECT_NEAR(lens["final"][p][i]["logit"].get<double>(), (*c)["top10_logits"][p][i].get<double>(), kTol)
            << "top-10 logit at position " << p << " rank " << i;
      }
      EXPECT_EQ(lens["final"][p][0]["id"], (*c)["top10_ids"][p][0]) << "argmax at position " << p;
    }
    // The logits stage's first values at the last position are the golden logits'.
    const auto golden_last = test::read_f32_file(dir_ + "/golden_last_logits." + (*c)["name"].get<std::string>() + ".f32");
    for (const Json& s : j["stages"]) {
      if (s["name"] != "logits") continue;
      for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(s["first"][n - 1][i].get<double>(), golden_last[i], kTol) << "logit " << i;
    }

    // A mixture of experts: the experts each position chose, as the golden routes them
    // (its near ties excepted, where a float32 engine may choose the other expert).
    if (golden.contains("routing") && golden["routing"]["prompt"] == (*c)["name"]) {
      ASSERT_TRUE(j.contains("routing"));
      std::set<std::pair<int, int>> near_ties;
      for (const Json& t : (*c)["routing_near_ties"]) near_ties.insert({t[0].get<int>(), t[1].get<int>()});
      const Json& got = j["routing"]["layers"];
      ASSERT_EQ(got.size(), golden["routing"]["layers"].size());
      for (size_t i = 0; i < got.size(); ++i) {
        const Json& want = golden["routing"]["layers"][i];
        EXPECT_EQ(got[i]["layer"], want["layer"]);
        for (size_t p = 0; p < want["experts"].size(); ++p) {
          if (near_ties.count({want["layer"].get<int>(), static_cast<int>(p)})) continue;
          EXPECT_EQ(got[i]["experts"][p], want["experts"][p]) << "layer " << want["layer"] << " position " << p;
          for (size_t r = 0; r < want["weights"][p].size(); ++r)
            EXPECT_NEAR(got[i]["weights"][p][r].get<double>(), want["weights"][p][r].get<double>(), kTol);
        }
      }
    }

    // numpy reads the dump and finds the JSON's values.
    test::write_string(tmp.file("trace.json"), r.out);
    const auto py = test::run_command(python3() + " " + test::shell_quote(GLASS_CHECK_DUMP) + " " +
                                      test::shell_quote(dump) + " " + test::shell_quote(tmp.file("trace.json")));
    EXPECT_EQ(py.exit_code, 0) << "numpy check of the dump failed (needs Debian's python3-numpy):\n" << py.out << py.err;
  }

 private:
  std::string dir_, backend_;
};

}  // namespace
}  // namespace glass

int main(int argc, char** argv) {
  return glass::test::run_fixture_main(
      argc, argv, "golden.json",
      {{"GoldenTraceCli", {"reference", "cpu"}, [](const std::string& dir, const std::string& backend) -> ::testing::Test* {
          return new glass::GoldenTraceCli(dir, backend);
        }}});
}
