#include "server/host_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/error.h"

namespace glass::server {

std::string lowercase_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

namespace {

struct Authority {
  std::string host;  // lowercase, without a trailing dot; IPv6 in brackets
  std::optional<int> port;
};

std::optional<int> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  int port = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port > 65535) return std::nullopt;
  return port;
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// "host", "host:port", "[v6]", "[v6]:port"; nullopt for anything else.
std::optional<Authority> parse_authority(std::string_view s) {
  Authority a;
  std::string_view rest;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    const std::string inside(s.substr(1, close - 1));
    in6_addr addr{};
    if (::inet_pton(AF_INET6, inside.c_str(), &addr) != 1) return std::nullopt;
    char canonical[INET6_ADDRSTRLEN];
    ::inet_ntop(AF_INET6, &addr, canonical, sizeof canonical);
    a.host = str_cat("[", canonical, "]");
    rest = s.substr(close + 1);
  } else {
    const size_t colon = s.find(':');
    if (colon != std::string_view::npos && s.find(':', colon + 1) != std::string_view::npos) return std::nullopt;
    std::string_view name = s.substr(0, colon);
    if (!name.empty() && name.back() == '.') name.remove_suffix(1);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_name_char)) return std::nullopt;
    a.host = lowercase_ascii(name);
    rest = colon == std::string_view::npos ? std::string_view() : s.substr(colon);
  }
  if (!rest.empty()) {
    if (rest.front() != ':') return std::nullopt;
    a.port = parse_port(rest.substr(1));
    if (!a.port) return std::nullopt;
  }
  return a;
}

bool is_loopback_name(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  std::string inside = host;
  if (inside.size() > 2 && inside.front() == '[' && inside.back() == ']') inside = inside.substr(1, inside.size() - 2);
  in6_addr v6{};
  return ::inet_pton(AF_INET6, inside.c_str(), &v6) == 1 && std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
}

bool is_wildcard_address(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  std::string h = lowercase_ascii(host);
  if (!h.empty() && h.back() == '.') h.pop_back();
  return is_loopback_name(h);
}

HostPolicy HostPolicy::make(const std::string& bind_host, const std::vector<std::string>& allowed_hosts) {
  HostPolicy p;
  for (const std::string& raw : allowed_hosts) {
    std::string_view entry = trim_spaces(raw);
    if (entry == "*") {
      p.any_ = true;
      continue;
    }
    Pattern pattern;
    if (entry.substr(0, 2) == "*.") {
      pattern.subdomains = true;
      entry.remove_prefix(2);
    }
    const std::optional<Authority> a = parse_authority(entry);
    if (!a || (pattern.subdomains && a->host.front() == '['))
      fail("--allowed-hosts: '", raw, "' is not a host name (name, name:port, *.domain, [IPv6] or *)");
    pattern.name = a->host;
    pattern.port = a->port;
    p.patterns_.push_back(std::move(pattern));
  }
  if (allowed_hosts.empty()) {
    if (!is_loopback_host(bind_host)) p.any_ = true;
  } else if (!is_wildcard_address(bind_host) && !is_loopback_host(bind_host)) {
    // The address the server is bound to names the server itself.
    if (auto a = parse_authority(bind_host.find(':') != std::string::npos && bind_host.front() != '[' ? "[" + bind_host + "]"
                                                                                                    : bind_host))
      p.patterns_.push_back({a->host, false, std::nullopt});
  }
  return p;
}

bool HostPolicy::allows(const std::string& host, std::optional<int> port) const {
  if (any_ || is_loopback_name(host)) return true;
  for (const Pattern& p : patterns_) {
    const bool name_matches = p.subdomains ? host.size() > p.name.size() + 1 && host.ends_with("." + p.name) : host == p.name;
    if (name_matches && (!p.port || p.port == port)) return true;
  }
  return false;
}

bool HostPolicy::allows_host(std::string_view host_header) const {
  if (any_) return true;
  const std::optional<Authority> a = parse_authority(host_header);
  return a && allows(a->host, a->port.value_or(80));
}

bool HostPolicy::allows_origin(std::string_view origin) const {
  if (any_) return true;
  // scheme "://" authority [path]; "null" (sandboxed frames, file: pages) names no host.
  const size_t sep = origin.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  const std::string scheme = lowercase_ascii(origin.substr(0, sep));
  std::string_view rest = origin.substr(sep + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  const std::optional<Authority> a = parse_authority(rest);
  if (!a) return false;
  std::optional<int> port = a->port;
  if (!port && scheme == "http") port = 80;
  if (!port && scheme == "https") port = 443;
  return allows(a->host, port);
}

std::string HostPolicy::describe() const {
  if (any_) return "any";
  std::string out = "loopback names";
  for (const Pattern& p : patterns_) {
    out += ", ";
    if (p.subdomains) out += "*.";
    out += p.name;
    if (p.port) out += str_cat(":", *p.port);
  }
  return out;
}

}  // namespace glass::server
