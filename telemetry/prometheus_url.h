// The Prometheus base URL of the telemetry settings, split for the client.
// Header-only: the policy loader validates the URL with the same function the
// client uses, without linking the client.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tessera {

struct PrometheusEndpoint {
  std::string host;         ///< Name or IPv4 literal (IPv6 as "[::1]" in the URL, stored without brackets).
  uint16_t port = 80;
  std::string path_prefix;  ///< "" or "/prefix" without a trailing slash.

  bool operator==(const PrometheusEndpoint&) const = default;
};

/// Parses "http://host[:port][/prefix]". Only plain HTTP: https, user info,
/// a query or a fragment are errors (InvalidArgument, saying which).
inline absl::StatusOr<PrometheusEndpoint> ParsePrometheusUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return absl::InvalidArgumentError("must start with http:// (plain HTTP; TLS is not supported)");
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#@") != std::string_view::npos) {
    return absl::InvalidArgumentError("must not contain user info, a query or a fragment");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);

  PrometheusEndpoint endpoint;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return absl::InvalidArgumentError("has an unterminated [IPv6] host");
    endpoint.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return absl::InvalidArgumentError("has junk after the [IPv6] host");
      port = after.substr(1);
      if (port.empty()) return absl::InvalidArgumentError("has an empty port");
    }
  } else {
    const size_t colon = authority.find(':');
    endpoint.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return absl::InvalidArgumentError("has an empty port");
    }
  }
  if (endpoint.host.empty()) return absl::InvalidArgumentError("has no host");
  if (!port.empty()) {
    uint32_t value = 0;
    if (!absl::SimpleAtoi(absl::string_view(port.data(), port.size()), &value) || value == 0 || value > 65535 ||
        port.find_first_not_of("0123456789") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("has an invalid port \"", absl::string_view(port.data(), port.size()), "\""));
    }
    endpoint.port = static_cast<uint16_t>(value);
  }
  endpoint.path_prefix = std::string(path);
  return endpoint;
}

}  // namespace tessera
