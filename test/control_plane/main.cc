// The control-plane tests' main: one plane and one Tessera for the whole
// binary (ControlPlaneEnvironment), since starting them takes seconds.
// Tessera also serves its admission webhook (webhook_setup.h), over TLS with
// a CA and certificate made here for 127.0.0.1.
#include <cstdlib>
#include <iostream>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include "test/control_plane/webhook_setup.h"
#include "test/testing/control_plane.h"
#include "test/testing/tls_test_certs.h"

namespace tessera::testing {
namespace {

struct Webhook {
  uint16_t port = 0;
  std::string ca_pem;
  std::optional<TlsTestCertFiles> files;
};
Webhook& TheWebhook() {
  static Webhook webhook;
  return webhook;
}

// A port free now (bound and released): Tessera binds it moments later.
uint16_t FreePort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

}  // namespace

uint16_t WebhookPort() { return TheWebhook().port; }
const std::string& WebhookCaPem() { return TheWebhook().ca_pem; }

}  // namespace tessera::testing

int main(int argc, char** argv) {
  using namespace tessera::testing;
  ::testing::InitGoogleTest(&argc, argv);
  ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  // The policy the image ships: what users run, not a test policy.
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml";

  absl::StatusOr<TlsTestCerts> certs = TlsTestCerts::Generate();
  absl::StatusOr<TlsTestCertFiles> files =
      certs.ok() ? TlsTestCertFiles::Write(*certs) : absl::StatusOr<TlsTestCertFiles>(certs.status());
  if (!files.ok()) {
    std::cerr << "cannot make the webhook's certificates: " << files.status() << std::endl;
    return 1;
  }
  Webhook& webhook = TheWebhook();
  webhook.port = FreePort();
  webhook.ca_pem = certs->ca.cert_pem;
  webhook.files.emplace(*std::move(files));
  options.extender_flags = {"--webhook-port=" + std::to_string(webhook.port),
                            "--webhook-cert-file=" + webhook.files->server_cert(),
                            "--webhook-key-file=" + webhook.files->server_key()};
  ::testing::AddGlobalTestEnvironment(new ControlPlaneEnvironment(options));
  return RUN_ALL_TESTS();
}
