// The web UI's files as `glass serve` answers them: `/` is index.html, `/webui/NAME` the
// others (webui/web_assets.h). From the binary, or from a folder (glass serve
// --webui-dir, for working on the page without rebuilding): only names the binary has
// are served from it, so no other file of the folder can be read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::server {

struct WebPageFile {
  std::string content_type;
  std::string bytes;
};

// The file for a request path, or nullopt (404). Throws glass::Error when the folder's
// copy of a known file cannot be read.
std::optional<WebPageFile> web_page_file(std::string_view path, const std::optional<std::string>& folder);

// Every path web_page_file() answers: `/` and `/webui/NAME` for each file.
std::vector<std::string> web_page_paths();

// The headers every page file is sent with: a Content-Security-Policy that lets the page
// load only its own files and talk only to this server (so that no model output could
// run a script even if it reached the DOM as HTML), no MIME sniffing, no referrer.
std::vector<std::pair<std::string, std::string>> web_page_headers();

}  // namespace glass::server
