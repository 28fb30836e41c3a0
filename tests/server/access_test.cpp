// Who may use the server: the API key (--api-key, 401) and CORS (--cors-origin).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "server/api_key.h"
#include "server/cors_policy.h"
#include "support/test_support.h"

namespace glass::test {
namespace {

using server::ApiKey;
using server::constant_time_equals;
using server::CorsPolicy;

constexpr const char* kKey = "sk-glass-test-0123456789";

TEST(ApiKey, ComparesWholeKeysOnly) {
  EXPECT_TRUE(constant_time_equals("abc", "abc"));
  EXPECT_FALSE(constant_time_equals("abd", "abc"));
  EXPECT_FALSE(constant_time_equals("xbc", "abc"));
  EXPECT_FALSE(constant_time_equals("ab", "abc"));
  EXPECT_FALSE(constant_time_equals("abcabc", "abc")) << "a key repeated reads the key cyclically: still not equal";
  EXPECT_FALSE(constant_time_equals("abcd", "abc"));
  EXPECT_FALSE(constant_time_equals("", "abc"));
  EXPECT_FALSE(constant_time_equals("", ""));
  EXPECT_FALSE(constant_time_equals(std::string("ab\0", 3), "ab"));
}

TEST(ApiKey, TakesBearerInAnyCaseAndNothingElse) {
  const ApiKey key = ApiKey::make(kKey, "--api-key");
  const auto allowed = [&](const std::string& header) { return !key.refusal(&header).has_value(); };
  EXPECT_TRUE(allowed(std::string("Bearer ") + kKey));
  EXPECT_TRUE(allowed(std::string("bearer ") + kKey));
  EXPECT_TRUE(allowed(std::string("BEARER  ") + kKey + " "));
  for (const std::string& bad : {std::string(kKey), std::string("Basic ") + kKey, std::string("Bearer"), std::string("Bearer "),
                                std::string("Bearer ") + kKey + "x", std::string("Bearer x") + kKey,
                                std::string("Bearer ") + std::string(kKey).substr(1), std::string("Bearer:") + kKey,
                                std::string("Bearer ") + kKey + " " + kKey})
    EXPECT_FALSE(allowed(bad)) << bad;
  const auto missing = key.refusal(nullptr);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status(), 401);
  EXPECT_NE(std::string(missing->what()).find("didn't provide an API key"), std::string::npos);
  const std::string wrong = "Bearer nope";
  const auto refused = key.refusal(&wrong);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(std::string(refused->what()), "Incorrect API key provided");
  EXPECT_EQ(refused->code(), "invalid_api_key");
}

TEST(ApiKey, EmptyOrUnsendableKeysAreRefusedNamingTheSource) {
  EXPECT_NE(thrown_error([] { ApiKey::make("", "--api-key"); }).find("--api-key: the API key is empty"), std::string::npos);
  EXPECT_NE(thrown_error([] { ApiKey::make("", "GLASS_API_KEY"); }).find("GLASS_API_KEY"), std::string::npos);
  EXPECT_NE(thrown_error([] { ApiKey::make("two words", "--api-key"); }).find("space at byte 3"), std::string::npos);
  EXPECT_NE(thrown_error([] { ApiKey::make("tab\there", "--api-key"); }).find("control character"), std::string::npos);
}

TEST(CorsPolicy, MatchesOriginsAsBrowsersSendThem) {
  const CorsPolicy off = CorsPolicy::make({});
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.allows("http://localhost:3000"));
  EXPECT_EQ(off.describe(), "off");

  const CorsPolicy p = CorsPolicy::make({"http://localhost:3000", "HTTPS://App.Example:443/", "http://[::1]:80"});
  EXPECT_TRUE(p.enabled());
  for (const char* o : {"http://localhost:3000", "HTTP://LOCALHOST:3000", "https://app.example", "http://[::1]"})
    EXPECT_TRUE(p.allows(o)) << o;
  for (const char* o : {"http://localhost:3001", "https://localhost:3000", "http://app.example", "https://app.example:8443",
                        "https://app.example.evil", "null", "", "http://localhost:3000/path"})
    EXPECT_FALSE(p.allows(o)) << o;
  EXPECT_EQ(p.describe(), "http://localhost:3000, https://app.example, http://[::1]");

  const CorsPolicy any = CorsPolicy::make({"*"});
  EXPECT_TRUE(any.allows("https://anything.example"));
  EXPECT_TRUE(any.allows("null"));
  EXPECT_EQ(any.describe(), "any");

  for (const std::string bad : {"localhost:3000", "http://", "http://a/b", "http://a?x", "://a", "1http://a", "http://u@a", ""})
    EXPECT_NE(thrown_error([&] { CorsPolicy::make({bad}); }).find("--cors-origin: '" + bad + "' is not an origin"),
              std::string::npos)
        << bad;
}

TEST(CorsPolicy, PreflightAllowsTheRequestedHeaderNames) {
  EXPECT_EQ(CorsPolicy::allowed_headers(""), "Authorization, Content-Type");
  EXPECT_EQ(CorsPolicy::allowed_headers("authorization, content-type"), "Authorization, Content-Type");
  EXPECT_EQ(CorsPolicy::allowed_headers("authorization,x-stainless-os, X-Stainless-Lang ,bad header,x\"y"),
            "Authorization, Content-Type, x-stainless-os, X-Stainless-Lang");
}

}  // namespace
}  // namespace glass::test
