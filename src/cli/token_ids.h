#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace glass::cli {

// Parses "9707 11 1879" or "9707,11,1879". `option` names the flag in errors.
std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& option);

}  // namespace glass::cli
