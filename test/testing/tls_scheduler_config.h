// The scheduler configuration template (up.sh fills in its @...@
// placeholders) that has kube-scheduler call Tessera over HTTPS: for the TLS
// control-plane tests and the end-to-end benchmark's --tls runs.
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "test/testing/scheduler_config_head.h"
#include "test/testing/tls_test_certs.h"

namespace tessera::testing {

/// up.sh's scheduler-config.yaml.tmpl with Tessera over HTTPS: the
/// KubeSchedulerConfiguration v1 Extender's enableHTTPS and tlsConfig
/// (ExtenderTLSConfig: caFile checks Tessera's certificate, certFile and
/// keyFile are kube-scheduler's client certificate).
inline std::string TlsSchedulerConfigTemplate(const testing::TlsTestCertFiles& files) {
  return absl::StrCat(kSchedulerConfigHead, R"(extenders:
  - urlPrefix: "https://127.0.0.1:@EXT_PORT@@EXT_URL_PATH@"
    filterVerb: "filter"
    prioritizeVerb: "prioritize"
    bindVerb: "bind"
    preemptVerb: "preempt"
    weight: 5
    enableHTTPS: true
    tlsConfig:
      caFile: ")",
                      files.ca_cert(), R"("
      certFile: ")",
                      files.client_cert(), R"("
      keyFile: ")",
                      files.client_key(), R"("
    nodeCacheCapable: @NODE_CACHE_CAPABLE@
    ignorable: @EXT_IGNORABLE@
@EXT_HTTP_TIMEOUT_LINE@
)");
}

}  // namespace tessera::testing
