// -m ORG/NAME from a Hugging Face cache laid out as huggingface_hub lays it out: blobs named
// by hashes, snapshots/<commit>/ of symlinks into ../../blobs/, refs/<name> holding a commit.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "base/json_fields.h"
#include "cli/hf_cache.h"
#include "background_serve.h"
#include "support/test_support.h"

namespace glass {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;

constexpr const char* kMainCommit = "1111111111111111111111111111111111111111";
constexpr const char* kOtherCommit = "2222222222222222222222222222222222222222";

// A fake content hash for a blob: unique per commit and file name, as real ones are per content.
std::string blob_name(const std::string& commit, const std::string& file) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(commit + "/" + file));
  return std::string(hex) + std::string(hex) + "deadbeef";
}

// models--ORG--NAME under `hub`, with `commit`'s snapshot holding `files` (name in the
// snapshot -> the file copied into blobs/), and refs/<ref> = commit for each of `refs`.
void add_snapshot(const std::string& hub, const std::string& repo, const std::string& commit,
                  const std::map<std::string, std::string>& files, const std::vector<std::string>& refs) {
  const std::string org = repo.substr(0, repo.find('/')), name = repo.substr(repo.find('/') + 1);
  const fs::path repo_dir = fs::path(hub) / ("models--" + org + "--" + name);
  const fs::path snapshot = repo_dir / "snapshots" / commit;
  fs::create_directories(repo_dir / "blobs");
  fs::create_directories(snapshot);
  for (const auto& [in_snapshot, source] : files) {
    const std::string blob = blob_name(commit, in_snapshot);
    fs::copy_file(source, repo_dir / "blobs" / blob, fs::copy_options::overwrite_existing);
    fs::create_symlink(fs::path("../../blobs") / blob, snapshot / in_snapshot);
  }
  for (const std::string& ref : refs) {
    fs::create_directories((repo_dir / "refs" / ref).parent_path());
    test::write_string((repo_dir / "refs" / ref).string(), commit);  // no newline, as huggingface_hub writes it
  }
}

// Every file of a checkpoint folder, under its own name.
std::map<std::string, std::string> folder_files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) files[entry.path().filename().string()] = entry.path().string();
  return files;
}

// glass with the Hugging Face variables set as given (and every other one of them unset).
test::CommandResult run_glass_env(const std::map<std::string, std::string>& env, const std::string& args,
                                  const std::string& cwd = "") {
  std::string line = cwd.empty() ? "" : "cd " + shell_quote(cwd) + " && ";
  line += "env -u HF_HUB_CACHE -u HF_HOME -u XDG_CACHE_HOME";
  for (const auto& [name, value] : env) line += " " + name + "=" + shell_quote(value);
  return test::run_command(line + " " + shell_quote(test::glass_binary()) + " " + args);
}

constexpr const char* kRunArgs = " -p 'Hello' -n 3 --greedy --ignore-eos";

std::string run_output_of_folder(const std::string& dir) {
  const auto r = test::run_glass("run -m " + shell_quote(dir) + kRunArgs);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(HfCache, RunFromTheCacheEqualsRunFromTheFolder) {
  test::TempDir hub;
  add_snapshot(hub.path(), "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  const auto r = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo") + kRunArgs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, run_output_of_folder(test::demo_model_dir()));
  EXPECT_NE(r.err.find(std::string("snapshots/") + kMainCommit), std::string::npos) << r.err;  // says what it opened
}

TEST(HfCache, HfHomeHubIsTheCacheWithoutHfHubCache) {
  test::TempDir home;
  add_snapshot(home.path() + "/hub", "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  const auto r = run_glass_env({{"HF_HOME", home.path()}}, std::string("run -m Qwen/Demo") + kRunArgs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, run_output_of_folder(test::demo_model_dir()));
}

TEST(HfCache, HfHubCacheWinsOverHfHome) {
  test::TempDir home, hub;
  add_snapshot(home.path() + "/hub", "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  // Only HF_HOME has it: with HF_HUB_CACHE set elsewhere the model is not found, there.
  const auto r = run_glass_env({{"HF_HOME", home.path()}, {"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo") + kRunArgs);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(hub.path() + "/models--Qwen--Demo"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$HF_HUB_CACHE"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(home.path()), std::string::npos) << r.err;
}

TEST(HfCache, RevisionByRefNameAndByCommit) {
  test::TempDir hub, other;
  test::write_constant_token_model(other.path(), 1879);
  add_snapshot(hub.path(), "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  add_snapshot(hub.path(), "Qwen/Demo", kOtherCommit, folder_files(other.path()), {"v1.0", "pr/1"});
  const std::string other_output = run_output_of_folder(other.path());
  ASSERT_NE(other_output, run_output_of_folder(test::demo_model_dir()));  // else the test could not tell them apart
  for (const std::string& revision : {std::string("v1.0"), std::string("pr/1"), std::string(kOtherCommit)}) {
    const auto r = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, "run -m Qwen/Demo@" + revision + kRunArgs);
    ASSERT_EQ(r.exit_code, 0) << revision << ": " << r.err;
    EXPECT_EQ(r.out, other_output) << revision;
  }
  const auto missing = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo@v2") + kRunArgs);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("revision 'v2'"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("refs there: main, pr/1, v1.0"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("huggingface-cli download Qwen/Demo --revision v2"), std::string::npos) << missing.err;
}

TEST(HfCache, MissingModelNamesWhereItLookedAndTheDownloadCommand) {
  test::TempDir hub, cwd;
  const auto r = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, "run -m Qwen/Qwen2.5-0.5B-Instruct -p hi", cwd.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(cwd.path() + "/Qwen/Qwen2.5-0.5B-Instruct"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(hub.path() + "/models--Qwen--Qwen2.5-0.5B-Instruct"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("never downloads"), std::string::npos) << r.err;
}

TEST(HfCache, DefaultCacheIsUnderHome) {
  test::TempDir home;
  add_snapshot(home.path() + "/.cache/huggingface/hub", "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  const auto r = run_glass_env({{"HOME", home.path()}}, "inspect -m Qwen/Demo");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(kMainCommit), std::string::npos) << r.out;
}

TEST(HfCache, ALocalPathWinsOverTheCache) {
  test::TempDir hub, cwd;
  add_snapshot(hub.path(), "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  test::write_constant_token_model(cwd.path() + "/Qwen/Demo", 1879);
  const auto r = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo") + kRunArgs, cwd.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, run_output_of_folder(cwd.path() + "/Qwen/Demo"));
  EXPECT_EQ(r.err.find("Hugging Face cache"), std::string::npos) << r.err;
}

TEST(HfCache, OtherCommandsTakeTheCacheToo) {
  test::TempDir hub;
  add_snapshot(hub.path(), "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  for (const std::string& args : {std::string("tokenize -m Qwen/Demo --text Hello"),
                                  std::string("chat-template -m Qwen/Demo --no-generation-prompt"),
                                  "logits -m Qwen/Demo --ids 9707 --out " + shell_quote(hub.file("logits.f32"))}) {
    const auto r = test::run_command("echo '[{\"role\":\"user\",\"content\":\"hi\"}]' | env HF_HUB_CACHE=" + shell_quote(hub.path()) +
                                     " " + shell_quote(test::glass_binary()) + " " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    EXPECT_NE(r.err.find("(the Hugging Face cache)"), std::string::npos) << args << ": " << r.err;
  }
}

// The server names a cached model by its repo id, as clients know it, not by its commit.
TEST(HfCache, ServeNamesTheModelOrgName) {
  test::TempDir hub;
  add_snapshot(hub.path(), "Qwen/Demo", kMainCommit, folder_files(test::demo_model_dir()), {"main"});
  const test::BackgroundServe serve("HF_HUB_CACHE=" + shell_quote(hub.path()), "-m Qwen/Demo --quiet");
  ASSERT_NE(serve.port(), 0) << serve.log();
  httplib::Client client("127.0.0.1", serve.port());
  const auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  ASSERT_EQ(models->status, 200);
  EXPECT_EQ(Json::parse(models->body)["data"][0]["id"], "Qwen/Demo") << models->body;
}

// A GGUF of the demo model, written once per test that needs one.
std::string demo_gguf(const test::TempDir& dir) {
  const std::string path = dir.file("demo-q8_0.gguf");
  const auto r = test::run_glass("convert -m " + shell_quote(test::demo_model_dir()) + " --out " + shell_quote(path) + " --type Q8_0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

TEST(HfCache, GgufRepoWithOneFileRunsIt) {
  test::TempDir hub, work;
  const std::string gguf = demo_gguf(work);
  add_snapshot(hub.path(), "Qwen/Demo-GGUF", kMainCommit, {{"demo-q8_0.gguf", gguf}, {"README.md", gguf}}, {"main"});
  const auto r = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo-GGUF") + kRunArgs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, run_output_of_folder(gguf));
}

TEST(HfCache, GgufRepoWithSeveralFilesListsThemAndTakesOneByName) {
  test::TempDir hub, work;
  const std::string gguf = demo_gguf(work);
  add_snapshot(hub.path(), "Qwen/Demo-GGUF", kMainCommit,
               {{"demo-q4_0.gguf", gguf}, {"demo-q8_0.gguf", gguf}, {"demo-f16-00001-of-00002.gguf", gguf},
                {"demo-f16-00002-of-00002.gguf", gguf}},
               {"main"});
  const auto several = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo-GGUF") + kRunArgs);
  EXPECT_EQ(several.exit_code, 1);
  for (const char* choice : {"-m Qwen/Demo-GGUF/demo-q4_0.gguf", "-m Qwen/Demo-GGUF/demo-q8_0.gguf",
                             "-m Qwen/Demo-GGUF/demo-f16-00001-of-00002.gguf"})
    EXPECT_NE(several.err.find(choice), std::string::npos) << choice << " in " << several.err;
  EXPECT_EQ(several.err.find("00002-of-00002"), std::string::npos) << several.err;  // a split set is one model

  const auto chosen = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo-GGUF/demo-q8_0.gguf") + kRunArgs);
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_EQ(chosen.out, run_output_of_folder(gguf));
  const auto at_commit = run_glass_env({{"HF_HUB_CACHE", hub.path()}},
                                       "run -m Qwen/Demo-GGUF@" + std::string(kMainCommit) + "/demo-q8_0.gguf" + kRunArgs);
  ASSERT_EQ(at_commit.exit_code, 0) << at_commit.err;
  EXPECT_EQ(at_commit.out, chosen.out);

  const auto absent = run_glass_env({{"HF_HUB_CACHE", hub.path()}}, std::string("run -m Qwen/Demo-GGUF/demo-q2_k.gguf") + kRunArgs);
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_NE(absent.err.find("demo-q2_k.gguf: no such file in the snapshot"), std::string::npos) << absent.err;
  EXPECT_NE(absent.err.find("demo-q8_0.gguf"), std::string::npos) << absent.err;
}

TEST(HfCache, ModelIdsAreParsedAndPathsAreNot) {
  using cli::parse_hf_model_id;
  const auto plain = parse_hf_model_id("Qwen/Qwen2.5-0.5B-Instruct");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->repo, "Qwen/Qwen2.5-0.5B-Instruct");
  EXPECT_EQ(plain->revision, "main");
  EXPECT_EQ(plain->file, "");
  const auto file_at = parse_hf_model_id("Qwen/X-GGUF/x-q8_0.gguf@v1");
  ASSERT_TRUE(file_at);
  EXPECT_EQ(file_at->repo, "Qwen/X-GGUF");
  EXPECT_EQ(file_at->revision, "v1");
  EXPECT_EQ(file_at->file, "x-q8_0.gguf");
  const auto at_file = parse_hf_model_id("Qwen/X-GGUF@pr/1/x-q8_0.gguf");
  ASSERT_TRUE(at_file);
  EXPECT_EQ(at_file->revision, "pr/1");
  EXPECT_EQ(at_file->file, "x-q8_0.gguf");
  for (const char* not_an_id : {"model", "/abs/path", "./Qwen/X", "../Qwen/X", "a/b/c", "a/b/c/d.gguf", "Qwen/X@", "Qwen/a b",
                                "Qwen/..", ""})
    EXPECT_FALSE(parse_hf_model_id(not_an_id)) << not_an_id;
}

TEST(HfCache, CacheRootFollowsHuggingfaceHub) {
  auto root = [](std::map<std::string, std::string> env) {
    return cli::hf_cache_root([&env](const char* name) -> const char* {
      const auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  EXPECT_EQ(root({{"HF_HUB_CACHE", "/a"}, {"HF_HOME", "/b"}, {"HOME", "/h"}}).path, "/a");
  EXPECT_EQ(root({{"HF_HOME", "/b"}, {"HOME", "/h"}}).path, "/b/hub");
  EXPECT_EQ(root({{"HF_HUB_CACHE", ""}, {"HF_HOME", "/b"}}).path, "/b/hub");  // empty is unset
  EXPECT_EQ(root({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}).path, "/x/huggingface/hub");
  EXPECT_EQ(root({{"HOME", "/h"}}).path, "/h/.cache/huggingface/hub");
  EXPECT_EQ(root({{"HOME", "/h"}}).source, "~/.cache/huggingface/hub");
  EXPECT_NE(test::thrown_error([&] { root({}); }).find("HF_HUB_CACHE"), std::string::npos);
}

}  // namespace
}  // namespace glass
