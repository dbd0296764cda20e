// The options of an HttpServer under test that serves TLS with run-time test
// certificates (tls_test_certs.h): an ephemeral port, two io threads.
#pragma once

#include "extender/server/http_server.h"
#include "test/testing/tls_test_certs.h"

namespace tessera::testing {

inline HttpServerOptions TlsServerOptions(const TlsTestCertFiles& files) {
  HttpServerOptions o;
  o.port = 0;
  o.threads = 2;
  o.tls_cert_file = files.server_cert();
  o.tls_key_file = files.server_key();
  return o;
}

}  // namespace tessera::testing
