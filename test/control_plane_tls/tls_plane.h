// What the TLS plane's main made, for its tests: the certificates (the
// scheduler configuration that points kube-scheduler at them is
// test/testing/tls_scheduler_config.h).
#pragma once

#include <string>

#include "test/testing/tls_test_certs.h"

namespace tessera::tls_plane {

struct State {
  testing::TlsTestCerts certs;
  std::string dir;
};

inline State& Shared() {
  static State state;
  return state;
}

inline void Set(const testing::TlsTestCerts& certs, const std::string& dir) { Shared() = {certs, dir}; }

}  // namespace tessera::tls_plane
