// Where a command's model comes from: -m DIR or FILE, -m ORG/NAME from the Hugging Face
// cache, or the built-in demo model.
#pragma once

#include <string>

namespace glass::cli {

// The folder the build generated the demo model into.
std::string demo_model_dir();

// local_model_path(flag) when given; otherwise the demo model, announced on stderr as
// meaningless.
std::string resolve_model_dir(const std::string& flag);

// The local file or folder -m names: `flag` itself when it exists (a local path always
// wins), else ORG/NAME[@REVISION][/FILE.gguf] found in the Hugging Face cache (hf_cache.h).
// Refuses a -m that is neither a checkpoint folder nor a GGUF file (nor, where a command
// also takes one, a JSON file: `json_kind` "config.json", "tokenizer.json"; "" for none),
// saying what -m takes; a weight file gets the folder that holds it suggested.
std::string local_model_path(const std::string& flag, const std::string& json_kind);

}  // namespace glass::cli
