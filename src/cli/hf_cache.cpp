#include "cli/hf_cache.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/error.h"
#include "io/gguf.h"

namespace glass::cli {

namespace fs = std::filesystem;

namespace {

// What Hugging Face allows in an organisation or repository name.
bool is_repo_name_part(const std::string& s) {
  if (s.empty() || s.size() > 96 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::vector<std::string> split_slashes(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t slash; (slash = s.find('/', start)) != std::string::npos; start = slash + 1) parts.push_back(s.substr(start, slash - start));
  parts.push_back(s.substr(start));
  return parts;
}

std::string download_command(const HfModelId& id) {
  std::string command = "huggingface-cli download " + id.repo;
  if (!id.file.empty()) command += " " + id.file;
  if (id.revision != "main") command += " --revision " + id.revision;
  return command;
}

std::string read_ref(const fs::path& file) {
  std::ifstream in(file);
  std::string commit;
  std::getline(in, commit);
  while (!commit.empty() && (commit.back() == '\r' || commit.back() == ' ' || commit.back() == '\n')) commit.pop_back();
  return commit;
}

// Names under `dir` (recursively for refs such as refs/pr/1), sorted, comma-separated.
std::string names_under(const fs::path& dir, bool recursive) {
  std::vector<std::string> names;
  std::error_code ec;
  if (recursive) {
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file()) names.push_back(it->path().lexically_relative(dir).string());
  } else {
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const std::string& n : names) joined += (joined.empty() ? "" : ", ") + n;
  return joined.empty() ? "none" : joined;
}

// The .gguf files of a snapshot (symlinks followed), sorted by name.
std::vector<std::string> gguf_files(const fs::path& snapshot) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(snapshot, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".gguf" && it->is_regular_file()) names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::optional<HfModelId> parse_hf_model_id(const std::string& text) {
  HfModelId id;
  std::string path = text;
  if (const size_t at = text.find('@'); at != std::string::npos) {
    path = text.substr(0, at);
    id.revision = text.substr(at + 1);
    // ORG/NAME@REVISION/FILE.gguf: the file is the last part (a branch name may hold '/').
    if (const size_t slash = id.revision.rfind('/'); slash != std::string::npos && id.revision.ends_with(".gguf")) {
      id.file = id.revision.substr(slash + 1);
      id.revision = id.revision.substr(0, slash);
    }
    if (id.revision.empty()) return std::nullopt;
  }
  const std::vector<std::string> parts = split_slashes(path);
  if (parts.size() < 2 || parts.size() > 3 || !is_repo_name_part(parts[0]) || !is_repo_name_part(parts[1])) return std::nullopt;
  if (parts.size() == 3) {
    if (!id.file.empty() || parts[2].empty() || !parts[2].ends_with(".gguf") || parts[2] == "." || parts[2] == "..")
      return std::nullopt;
    id.file = parts[2];
  }
  id.repo = parts[0] + "/" + parts[1];
  if (id.revision.empty()) id.revision = "main";
  return id;
}

HfCacheRoot hf_cache_root(const EnvLookup& getenv) {
  auto set = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  if (auto v = set("HF_HUB_CACHE")) return {*v, "$HF_HUB_CACHE"};
  if (auto v = set("HF_HOME")) return {*v + "/hub", "$HF_HOME/hub"};
  if (auto v = set("XDG_CACHE_HOME")) return {*v + "/huggingface/hub", "$XDG_CACHE_HOME/huggingface/hub"};
  if (auto v = set("HOME")) return {*v + "/.cache/huggingface/hub", "~/.cache/huggingface/hub"};
  fail("-m ORG/NAME: cannot find the Hugging Face cache: none of HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME, HOME is set");
}

std::string find_in_hf_cache(const HfModelId& id, const HfCacheRoot& root, const std::string& flag_text) {
  const std::string org = id.repo.substr(0, id.repo.find('/'));
  const std::string name = id.repo.substr(id.repo.find('/') + 1);
  const fs::path repo_dir = fs::path(root.path) / ("models--" + org + "--" + name);
  const std::string get_it = str_cat("glass never downloads; get it with: ", download_command(id));
  if (!fs::is_directory(repo_dir))
    fail("-m ", flag_text, ": no such file or folder, and not in the Hugging Face cache; looked in ",
         fs::absolute(flag_text).string(), " and ", repo_dir.string(), " (the cache: ", root.source, "); ", get_it);

  // A ref names a commit; a 40-hex revision may be the commit itself.
  std::string commit;
  const fs::path ref = repo_dir / "refs" / id.revision;
  if (fs::is_regular_file(ref)) {
    commit = read_ref(ref);
    if (commit.empty()) fail("-m ", flag_text, ": ", ref.string(), " is empty; it should hold the commit of '", id.revision, "'");
  } else if (is_commit_hash(id.revision) && fs::is_directory(repo_dir / "snapshots" / id.revision)) {
    commit = id.revision;
  } else {
    fail("-m ", flag_text, ": revision '", id.revision, "' is not in the Hugging Face cache: looked for ", ref.string(),
         " and ", (repo_dir / "snapshots" / id.revision).string(), " (refs there: ", names_under(repo_dir / "refs", true),
         "; snapshots: ", names_under(repo_dir / "snapshots", false), "); ", get_it);
  }
  const fs::path snapshot = repo_dir / "snapshots" / commit;
  if (!fs::is_directory(snapshot))
    fail("-m ", flag_text, ": ", ref.string(), " names commit ", commit, " but ", snapshot.string(),
         " is missing (an interrupted download?); ", get_it);

  const std::vector<std::string> ggufs = gguf_files(snapshot);
  auto listing = [&] {
    std::string list;
    for (const std::string& g : ggufs) list += (list.empty() ? "" : ", ") + g;
    return list.empty() ? std::string("none") : list;
  };
  if (!id.file.empty()) {
    const fs::path file = snapshot / id.file;
    if (!fs::is_regular_file(file))
      fail("-m ", flag_text, ": ", file.string(), ": no such file in the snapshot (its GGUF files: ", listing(), "); ",
           get_it);
    return file.string();
  }
  if (fs::exists(snapshot / "config.json") || ggufs.empty()) return snapshot.string();
  // One model per file, or per split set (named by its first part).
  std::vector<std::string> models;
  for (const std::string& g : ggufs) {
    const auto split = parse_gguf_split_name(g);
    if (!split || split->number == 1) models.push_back(g);
  }
  if (models.size() == 1) return (snapshot / models.front()).string();
  std::string choices;
  for (const std::string& m : models) choices += str_cat("\n  -m ", id.repo, "/", m, id.revision == "main" ? "" : "@" + id.revision);
  fail("-m ", flag_text, ": the snapshot ", snapshot.string(), " has no config.json and ",
       models.empty() ? str_cat("no first part among its split GGUF files (", listing(), ")")
                      : str_cat("several GGUF models; pass one of:", choices));
}

}  // namespace glass::cli
