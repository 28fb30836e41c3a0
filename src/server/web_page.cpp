#include "server/web_page.h"

#include "base/error.h"
#include "base/mapped_file.h"
#include "webui/web_assets.h"

namespace glass::server {

namespace {

constexpr std::string_view kAssetPrefix = "/webui/";

}  // namespace

std::optional<WebPageFile> web_page_file(std::string_view path, const std::optional<std::string>& folder) {
  std::string_view name;
  if (path == "/") name = "index.html";
  else if (path.starts_with(kAssetPrefix)) name = path.substr(kAssetPrefix.size());
  else return std::nullopt;
  const webui::WebAsset* asset = webui::find_asset(name);
  if (asset == nullptr) return std::nullopt;
  WebPageFile file{std::string(asset->content_type), ""};
  if (!folder) {
    file.bytes = std::string(asset->bytes);
    return file;
  }
  const std::string on_disk = *folder + "/" + std::string(asset->name);
  try {
    file.bytes = read_text_file(on_disk, kMaxJsonFileBytes, "a web UI file");
  } catch (const Error& e) {
    fail("cannot read the web UI file (glass serve --webui-dir): ", e.what());
  }
  return file;
}

std::vector<std::string> web_page_paths() {
  std::vector<std::string> paths = {"/"};
  for (const webui::WebAsset& a : webui::builtin_assets()) paths.push_back(std::string(kAssetPrefix) + std::string(a.name));
  return paths;
}

std::vector<std::pair<std::string, std::string>> web_page_headers() {
  return {{"Content-Security-Policy",
           "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
           "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"Referrer-Policy", "no-referrer"},
          // A server restarted with another build serves another page: always revalidate.
          {"Cache-Control", "no-cache"}};
}

}  // namespace glass::server
