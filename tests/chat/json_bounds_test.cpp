// Request JSON on its way into a template (issue 15 item 4): an object's keys become a
// dict in the order sent, in time linear in their number (each key was compared with
// every key before it).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/error.h"
#include "chat/jinja_json.h"

namespace glass::jinja {
namespace {

// An object with `n` distinct keys k0, k1, ..., built by appending to its member list
// (the keys are distinct by construction), so that only the conversion is timed.
OrderedJson object_with_keys(int n) {
  OrderedJson j = OrderedJson::object();
  auto& members = static_cast<OrderedJson::object_t::Container&>(j.get_ref<OrderedJson::object_t&>());
  for (int i = 0; i < n; ++i) members.emplace_back(str_cat("k", i), i);
  return j;
}

TEST(JsonBounds, ManyKeysBecomeADictInLinearTime) {
  const OrderedJson j = object_with_keys(100000);
  const auto start = std::chrono::steady_clock::now();
  const Value v = value_from_json(j);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  ASSERT_TRUE(v.is_dict());
  const Dict& d = v.as_dict();
  ASSERT_EQ(d.size(), 100000u);
  EXPECT_EQ(d.entries()[0].first.as_string(), "k0");
  EXPECT_EQ(d.entries()[99999].first.as_string(), "k99999");
  EXPECT_EQ(d.entries()[99999].second.as_int(), 99999);
}

}  // namespace
}  // namespace glass::jinja
