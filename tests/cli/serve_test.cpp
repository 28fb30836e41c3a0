// glass serve's command line; the server itself is tested in tests/server.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "background_serve.h"
#include "support/test_support.h"

namespace glass {
namespace {

using test::run_glass;

TEST(ServeCli, RefusesBadOptionsBeforeLoading) {
  auto r = run_glass("serve --parallel 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--parallel"), std::string::npos) << r.err;
  r = run_glass("serve --port 70000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--port"), std::string::npos) << r.err;
  r = run_glass("serve --prefill-chunk 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--prefill-chunk"), std::string::npos) << r.err;
  r = run_glass("serve --allowed-hosts 'glass.lan,http://x'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--allowed-hosts: 'http://x'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("demo model"), std::string::npos) << "refused before loading: " << r.err;
  r = run_glass("serve --header-timeout 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--header-timeout"), std::string::npos) << r.err;
  r = run_glass("serve -m /nonexistent/model");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;
}

TEST(ServeCli, RefusesEmptyKeysAndBadAccessOptionsBeforeLoading) {
  auto r = run_glass("serve --api-key ''");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--api-key: the API key is empty"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("demo model"), std::string::npos) << "refused before loading: " << r.err;
  r = test::run_command("GLASS_API_KEY= " + test::shell_quote(test::glass_binary()) + " serve");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("GLASS_API_KEY: the API key is empty"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("demo model"), std::string::npos) << r.err;
  r = run_glass("serve --api-key 'my key'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--api-key: the API key has a space at byte 2"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("my key"), std::string::npos) << "the key is not repeated: " << r.err;
  r = run_glass("serve --cors-origin http://localhost:3000 --cors-origin localhost:5173");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--cors-origin: 'localhost:5173' is not an origin"), std::string::npos) << r.err;
  r = run_glass("serve --log-format xml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--log-format: 'xml' is not one of text, json"), std::string::npos) << r.err;
  r = run_glass("serve --responses-store 2000000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--responses-store: must be between 0 and 1000000, got 2000000"), std::string::npos) << r.err;
  r = run_glass("serve --webui-dir /nonexistent/webui");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--webui-dir: /nonexistent/webui has no index.html"), std::string::npos) << r.err;
  r = run_glass("serve --webui-dir /tmp --no-webui");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--webui-dir: the web UI is off (--no-webui)"), std::string::npos) << r.err;
}

// The page from the binary, or from a folder given with --webui-dir (only the files the
// binary has), and the line that says where it is.
TEST(ServeCli, ServesTheWebUiFromTheBinaryOrAFolder) {
  {
    const test::BackgroundServe serve("", "");
    ASSERT_NE(serve.port(), 0) << serve.log();
    EXPECT_NE(serve.log().find("web UI at http://127.0.0.1:" + std::to_string(serve.port()) + "/"), std::string::npos)
        << serve.log();
    httplib::Client client("127.0.0.1", serve.port());
    auto page = client.Get("/");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_NE(page->body.find("/webui/app.js"), std::string::npos);
  }
  test::TempDir dir;
  for (const char* name : {"index.html", "app.js", "secret.txt"}) {
    std::ofstream(dir.file(name)) << "from the folder: " << name;
  }
  const test::BackgroundServe serve("", "--webui-dir " + test::shell_quote(dir.path()));
  ASSERT_NE(serve.port(), 0) << serve.log();
  httplib::Client client("127.0.0.1", serve.port());
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->body, "from the folder: index.html");
  auto script = client.Get("/webui/app.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->body, "from the folder: app.js");
  EXPECT_EQ(client.Get("/webui/secret.txt")->status, 404);  // not a file of the web UI
  auto missing = client.Get("/webui/style.css");             // one of its files, missing there
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 500);
  EXPECT_NE(missing->body.find("cannot read the web UI file"), std::string::npos) << missing->body;
  const test::BackgroundServe off("", "--no-webui --no-inspect");
  ASSERT_NE(off.port(), 0) << off.log();
  EXPECT_EQ(off.log().find("web UI at"), std::string::npos) << off.log();
  EXPECT_EQ(httplib::Client("127.0.0.1", off.port()).Get("/")->status, 404);
}

TEST(ServeCli, HelpNamesTheOptions) {
  const auto r = run_glass("serve --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* option : {"--host", "--port", "--parallel", "--queue", "--ctx-size", "--kv-budget-mb", "--model-name",
                             "--allowed-hosts", "--header-timeout", "--request-timeout", "--max-connections", "--api-key",
                             "--cors-origin", "--log-format", "--responses-store", "--no-webui", "--no-inspect",
                             "--webui-dir", "GLASS_API_KEY"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

TEST(ServeCli, StartsAndStopsOnSigterm) {
  test::TempDir tmp;
  // Start on a free port, wait for the line that names it, then SIGTERM: exit status 0.
  const std::string err = tmp.file("err");
  const auto r = test::run_command(
      test::shell_quote(test::glass_binary()) + " serve --port 0 --quiet 2>" + test::shell_quote(err) + " & pid=$!; " +
      "for i in $(seq 100); do grep -q 'listening on http://127.0.0.1:' " + test::shell_quote(err) +
      " && break; sleep 0.1; done; kill -TERM $pid; wait $pid; echo \"exit $?\"; cat " + test::shell_quote(err));
  EXPECT_NE(r.out.find("listening on http://127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("glass serve: stopped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CORS origins: off; API key: none"), std::string::npos) << r.out;
}

// The key from the environment: the server requires it (and says so) without printing it.
TEST(ServeCli, TakesTheKeyFromTheEnvironment) {
  const test::BackgroundServe serve("GLASS_API_KEY=env-secret-key", "");
  ASSERT_NE(serve.port(), 0) << serve.log();
  const int port = serve.port();
  EXPECT_NE(serve.log().find("API key: required"), std::string::npos) << serve.log();

  httplib::Client client("127.0.0.1", port);
  auto without = client.Get("/v1/models");
  ASSERT_TRUE(without);
  EXPECT_EQ(without->status, 401);
  auto with = client.Get("/v1/models", {{"Authorization", "Bearer env-secret-key"}});
  ASSERT_TRUE(with);
  EXPECT_EQ(with->status, 200);
  EXPECT_EQ(serve.log().find("env-secret-key"), std::string::npos) << "never printed";
}
}  // namespace
}  // namespace glass
