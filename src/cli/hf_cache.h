// -m ORG/NAME: a model in the Hugging Face cache, laid out as huggingface_hub lays it out
// (models--ORG--NAME/refs/<ref> holds a commit; snapshots/<commit>/ is the model folder,
// its files symlinks into blobs/). glass only reads the cache; it never downloads.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace glass::cli {

// `ORG/NAME`, `ORG/NAME@REVISION`, `ORG/NAME/FILE.gguf` (a file of the snapshot), or both
// (`ORG/NAME@REVISION/FILE.gguf` or `ORG/NAME/FILE.gguf@REVISION`).
struct HfModelId {
  std::string repo;      // "ORG/NAME"
  std::string revision;  // a ref name ("main" when not given) or a 40-hex commit
  std::string file;      // "" for the whole snapshot
};

// `text` as a model id, or nothing when it cannot be one (an absolute path, ./ or ../,
// a single word, characters a repo name does not take).
std::optional<HfModelId> parse_hf_model_id(const std::string& text);

// The cache root and the variable it came from, as huggingface_hub picks it:
// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub. `getenv` looks a variable up (null: unset).
struct HfCacheRoot {
  std::string path;
  std::string source;  // "$HF_HUB_CACHE", "$HF_HOME/hub", ...
};
using EnvLookup = std::function<const char*(const char*)>;
HfCacheRoot hf_cache_root(const EnvLookup& getenv);

// The local path of `id` in the cache at `root`: the snapshot folder, or the one GGUF (or
// the first part of the one split set) of a snapshot that has no config.json, or the named
// file. Errors (glass::Error) name `flag_text` (what -m said), each path looked in and the
// command that downloads the model.
std::string find_in_hf_cache(const HfModelId& id, const HfCacheRoot& root, const std::string& flag_text);

}  // namespace glass::cli
