// Which Host and Origin headers the server answers (DNS rebinding, cross-site requests).
#include "server/host_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"

namespace glass::test {
namespace {

TEST(HostPolicy, LoopbackBindAllowsLoopbackNamesOnly) {
  const auto p = server::HostPolicy::make("127.0.0.1", {});
  EXPECT_FALSE(p.allows_any());
  for (const char* h : {"localhost", "localhost:80", "LocalHost.", "127.0.0.1", "127.0.0.1:8080", "[::1]", "[::1]:8080", "127.1.2.3"})
    EXPECT_TRUE(p.allows_host(h)) << h;
  for (const char* h : {"", "evil.com", "localhost.evil.com", "127.0.0.1.nip.io", "::1", "[::2]", "10.0.0.1", "localhost:x",
                        "local host", "[::1"})
    EXPECT_FALSE(p.allows_host(h)) << h;
  for (const char* o : {"http://localhost:3000", "https://127.0.0.1", "http://[::1]:5173"}) EXPECT_TRUE(p.allows_origin(o)) << o;
  for (const char* o : {"null", "http://evil.com", "evil.com", "http://", "file://", "http://localhost.evil.com:80"})
    EXPECT_FALSE(p.allows_origin(o)) << o;
  EXPECT_FALSE(server::HostPolicy::make("localhost", {}).allows_any());
  EXPECT_FALSE(server::HostPolicy::make("::1", {}).allows_any());
}

TEST(HostPolicy, OtherBindsAllowAnythingUnlessGivenAList) {
  const auto any = server::HostPolicy::make("0.0.0.0", {});
  EXPECT_TRUE(any.allows_any());
  EXPECT_TRUE(any.allows_host("evil.com"));
  EXPECT_TRUE(any.allows_origin("http://evil.com"));
  EXPECT_TRUE(server::HostPolicy::make("127.0.0.1", {"*"}).allows_any());

  const auto listed = server::HostPolicy::make("0.0.0.0", {"glass.lan", "*.corp.example", "API.example:8443", "[fd00::1]"});
  EXPECT_FALSE(listed.allows_any());
  for (const char* h : {"glass.lan", "glass.lan:1", "a.corp.example", "x.y.corp.example:80", "api.example:8443", "localhost",
                        "[fd00::1]:8080"})
    EXPECT_TRUE(listed.allows_host(h)) << h;
  for (const char* h : {"corp.example", "evilcorp.example", "api.example", "api.example:80", "evil.com", "glass.lan.evil.com"})
    EXPECT_FALSE(listed.allows_host(h)) << h;
  EXPECT_TRUE(listed.allows_origin("https://glass.lan"));
  EXPECT_TRUE(listed.allows_origin("http://api.example:8443"));
  EXPECT_FALSE(listed.allows_origin("https://api.example"));
  EXPECT_FALSE(listed.allows_origin("http://evil.com"));

  for (const std::string bad : {"", "http://x", "a b", "x:port", "*.*", "a/b", "*.[::1]"})
    EXPECT_THROW(server::HostPolicy::make("127.0.0.1", {bad}), Error) << bad;

  // A list also allows the address the server is bound to.
  const auto lan = server::HostPolicy::make("192.168.1.5", {"glass.lan"});
  EXPECT_TRUE(lan.allows_host("192.168.1.5:8080"));
  EXPECT_TRUE(lan.allows_origin("http://192.168.1.5:8080"));
  EXPECT_FALSE(lan.allows_host("192.168.1.6"));
  EXPECT_EQ(lan.describe(), "loopback names, glass.lan, 192.168.1.5");
  EXPECT_EQ(any.describe(), "any");
}

}  // namespace
}  // namespace glass::test
