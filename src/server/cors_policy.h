// glass serve --cors-origin: which web pages (origins) may read the server's responses
// from a browser. A request whose Origin is listed (or any, with `*`) gets
// Access-Control-Allow-Origin naming that origin, and every response Vary: Origin; an
// OPTIONS preflight on any route is answered 204 with the methods (GET, POST, DELETE, OPTIONS),
// the headers (Authorization, Content-Type, and whatever else the preflight asks for:
// the server ignores headers it does not know) and how long a browser may keep the
// answer. The listed origins also pass the Host/Origin check (host_policy.h), which
// refuses other sites' Origins with 403. Without entries nothing changes: no CORS headers,
// OPTIONS is not routed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::server {

class CorsPolicy {
 public:
  // Entries: "*", or an origin "scheme://host[:port]" (a trailing "/" and a scheme's
  // default port are dropped, names are case-insensitive). Throws glass::Error naming
  // --cors-origin and an entry that is not one.
  static CorsPolicy make(const std::vector<std::string>& origins);

  bool enabled() const { return any_ || !origins_.empty(); }
  bool allows(std::string_view origin_header) const;
  // For the startup line: "off", "any", or the origins.
  std::string describe() const;

  // A preflight's Access-Control-Allow-Headers: Authorization and Content-Type, then the
  // header names `requested` (Access-Control-Request-Headers) lists that are not those;
  // anything in it that is not a header name is left out.
  static std::string allowed_headers(std::string_view requested);
  static constexpr const char* kAllowedMethods = "GET, POST, DELETE, OPTIONS";
  static constexpr int kMaxAgeSeconds = 600;

 private:
  bool any_ = false;
  std::vector<std::string> origins_;  // normalized
};

// "scheme://host[:port]" lowercased, without a trailing "/" or the scheme's default port;
// nullopt for anything else (a path, a query, no host, "null").
std::optional<std::string> normalize_origin(std::string_view origin);

}  // namespace glass::server
