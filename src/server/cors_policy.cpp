#include "server/cors_policy.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "base/error.h"
#include "server/host_policy.h"

namespace glass::server {

namespace {

// RFC 9110 token characters: what a header name is made of.
bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

std::optional<std::string> normalize_origin(std::string_view origin) {
  const size_t sep = origin.find("://");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  const std::string_view scheme = origin.substr(0, sep);
  if (!std::isalpha(static_cast<unsigned char>(scheme[0])) ||
      !std::all_of(scheme.begin(), scheme.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
      }))
    return std::nullopt;
  std::string_view authority = origin.substr(sep + 3);
  if (!authority.empty() && authority.back() == '/') authority.remove_suffix(1);
  if (authority.empty()) return std::nullopt;
  // No path, query, fragment or user info; a bracketed IPv6 address keeps its colons.
  for (char c : authority)
    if (c == '/' || c == '?' || c == '#' || c == '@' || c == ' ' || static_cast<unsigned char>(c) < 0x20) return std::nullopt;
  const std::string lower_scheme = lowercase_ascii(scheme);
  std::string host = lowercase_ascii(authority);
  // Browsers leave a scheme's default port out of Origin.
  for (const auto& [name, port] : {std::pair<std::string_view, std::string_view>{"http", ":80"}, {"https", ":443"}})
    if (lower_scheme == name && host.size() > port.size() && host.ends_with(port)) host.resize(host.size() - port.size());
  std::string out = lower_scheme + "://" + host;
  return out;
}

CorsPolicy CorsPolicy::make(const std::vector<std::string>& origins) {
  CorsPolicy p;
  for (const std::string& raw : origins) {
    const std::string_view entry = trim_spaces(raw);
    if (entry == "*") {
      p.any_ = true;
      continue;
    }
    const std::optional<std::string> origin = normalize_origin(entry);
    if (!origin)
      fail("--cors-origin: '", raw, "' is not an origin (scheme://host[:port], e.g. http://localhost:3000, or * for any)");
    if (std::find(p.origins_.begin(), p.origins_.end(), *origin) == p.origins_.end()) p.origins_.push_back(*origin);
  }
  return p;
}

bool CorsPolicy::allows(std::string_view origin_header) const {
  if (any_) return true;
  if (origins_.empty()) return false;
  const std::optional<std::string> origin = normalize_origin(origin_header);
  return origin && std::find(origins_.begin(), origins_.end(), *origin) != origins_.end();
}

std::string CorsPolicy::describe() const {
  if (any_) return "any";
  if (origins_.empty()) return "off";
  std::string out;
  for (const std::string& o : origins_) out += (out.empty() ? "" : ", ") + o;
  return out;
}

std::string CorsPolicy::allowed_headers(std::string_view requested) {
  std::string out = "Authorization, Content-Type";
  std::vector<std::string> seen = {"authorization", "content-type"};
  while (!requested.empty()) {
    const size_t comma = requested.find(',');
    std::string_view name = requested.substr(0, comma);
    requested = comma == std::string_view::npos ? std::string_view() : requested.substr(comma + 1);
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char)) continue;
    std::string lower = lowercase_ascii(name);
    if (std::find(seen.begin(), seen.end(), lower) != seen.end()) continue;
    out += ", " + std::string(name);
    seen.push_back(std::move(lower));
  }
  return out;
}

}  // namespace glass::server
