// The web UI's files (src/webui, listed in assets.txt), built into the binary so that
// `glass serve` serves the page offline from one file: no CDN, nothing to install.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace glass::webui {

struct WebAsset {
  std::string_view name;          // "index.html", "app.js"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view bytes;
};

// Every file, index.html first.
std::span<const WebAsset> builtin_assets();
// The built-in file of that name, or nullptr.
const WebAsset* find_asset(std::string_view name);

}  // namespace glass::webui
