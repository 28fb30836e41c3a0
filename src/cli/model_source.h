// Where a command's model comes from: -m DIR, or the built-in demo model.
#pragma once

#include <string>

namespace glass::cli {

// The folder the build generated the demo model into.
std::string demo_model_dir();

// `flag` when given; otherwise the demo model, announced on stderr as meaningless.
std::string resolve_model_dir(const std::string& flag);

}  // namespace glass::cli
