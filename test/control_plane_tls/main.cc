// The TLS tests' main: a plane of their own, whose kube-scheduler calls
// Tessera over HTTPS (enableHTTPS, tlsConfig with the test CA and a client
// certificate), and whose Tessera serves TLS and lets only authenticated
// callers bind (--tls-client-auth=verbs). The certificates are generated now,
// and the scheduler configuration is written beside them.
#include <fstream>
#include <iostream>
#include <optional>

#include <gtest/gtest.h>

#include "test/control_plane_tls/tls_plane.h"
#include "test/testing/control_plane.h"
#include "test/testing/https_client.h"
#include "test/testing/tls_scheduler_config.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using namespace tessera::testing;
  absl::StatusOr<TlsTestCerts> certs = TlsTestCerts::Generate();
  if (!certs.ok()) {
    std::cerr << "cannot generate the test certificates: " << certs.status() << std::endl;
    return 1;
  }
  absl::StatusOr<TlsTestCertFiles> files = TlsTestCertFiles::Write(*certs);
  if (!files.ok()) {
    std::cerr << "cannot write the test certificates: " << files.status() << std::endl;
    return 1;
  }
  tessera::tls_plane::Set(*certs, files->dir());
  // up.sh fills in the @...@ placeholders; the certificate paths are ours.
  const std::string tmpl = files->dir() + "/scheduler-config.yaml.tmpl";
  std::ofstream(tmpl) << TlsSchedulerConfigTemplate(*files);

  ControlPlane::Options options;
  options.extender_binary = TESSERA_EXTENDER_BINARY;
  options.policy_file = std::string(TESSERA_SOURCE_DIR) + "/config/examples/default-policy.yaml";
  options.scheduler_config_template = tmpl;
  options.extender_flags = {"--tls-cert-file=" + files->server_cert(), "--tls-key-file=" + files->server_key(),
                            "--tls-client-ca-file=" + files->ca_cert(), "--tls-client-auth=verbs"};
  const HttpsClientConfig anonymous = TrustingCa(certs->ca.cert_pem);
  options.tessera_ready = [anonymous](uint16_t port) {
    return HttpsExchange(port, anonymous, boost::beast::http::verb::get, "/readyz").status == 200;
  };
  ::testing::AddGlobalTestEnvironment(new ControlPlaneEnvironment(options));
  return RUN_ALL_TESTS();
}
