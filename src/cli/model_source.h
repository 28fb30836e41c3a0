// Where a command's model comes from: -m DIR, or the built-in demo model.
#pragma once

#include <string>

namespace glass::cli {

// The folder the build generated the demo model into.
std::string demo_model_dir();

// `flag` when given (checked by check_model_path); otherwise the demo model, announced on
// stderr as meaningless.
std::string resolve_model_dir(const std::string& flag);

// Refuses a -m that is neither a checkpoint folder nor a GGUF file (nor, where a command
// also takes one, a JSON file: `json_kind` "config.json", "tokenizer.json"; "" for none),
// saying what -m takes; a weight file gets the folder that holds it suggested.
void check_model_path(const std::string& path, const std::string& json_kind);

}  // namespace glass::cli
