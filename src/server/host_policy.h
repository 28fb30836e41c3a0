// Which Host and Origin headers the server answers, against DNS rebinding (a web page
// whose name resolves to 127.0.0.1 reads the responses: its Host is the page's name) and
// cross-site requests (a page anywhere posts to localhost: its Origin names that page).
//
// Loopback names are always allowed: `localhost` (and `localhost.`), 127.0.0.0/8 and
// [::1], with any port; no attacker's page can have them as its Host. Beside them,
// `--allowed-hosts` entries: `name` (any port), `name:port`, `*.domain` (its subdomains),
// `[v6 address]`, or `*` for anything. Without entries, a server bound to a loopback
// address allows only the loopback names; one bound elsewhere (0.0.0.0, a LAN address)
// allows anything, as Ollama does. An entry list also allows the bound address itself.
//
// An Origin (sent by browsers on cross-origin and POST requests) must name an allowed
// host as well: `http://localhost:3000` passes, `https://evil.example` and `null` do not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::server {

// ASCII lowercase (host names, schemes); other bytes unchanged.
std::string lowercase_ascii(std::string_view s);
// `s` without leading and trailing spaces (entries of comma-separated flag values).
std::string_view trim_spaces(std::string_view s);

class HostPolicy {
 public:
  // Throws glass::Error naming an entry that is not a host pattern.
  static HostPolicy make(const std::string& bind_host, const std::vector<std::string>& allowed_hosts);

  bool allows_any() const { return any_; }
  bool allows_host(std::string_view host_header) const;
  bool allows_origin(std::string_view origin_header) const;
  // For the startup line: "any" or "loopback names, glass.lan, *.corp.example".
  std::string describe() const;

 private:
  struct Pattern {
    std::string name;  // lowercase; IPv6 in brackets
    bool subdomains = false;
    std::optional<int> port;
  };
  bool allows(const std::string& host, std::optional<int> port) const;

  bool any_ = false;
  std::vector<Pattern> patterns_;
};

// "localhost", 127.0.0.0/8, ::1 (bracketed or not).
bool is_loopback_host(std::string_view host);

}  // namespace glass::server
