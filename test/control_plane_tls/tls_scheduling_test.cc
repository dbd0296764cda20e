// kube-scheduler v1.26 calling Tessera over TLS: it checks Tessera's
// certificate against the test CA (tlsConfig.caFile) and shows its own client
// certificate (certFile, keyFile), so the bind it delegates passes Tessera's
// --tls-client-auth=verbs; a caller without one cannot bind.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/control_plane_tls/tls_plane.h"
#include "test/testing/control_plane.h"
#include "test/testing/https_client.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;
using ::testing::HasSubstr;
using nlohmann::json;
using testing::ControlPlaneTest;
using testing::HttpAnswer;
using testing::HttpsClientConfig;
using testing::HttpsExchange;
using testing::IsBound;

using TlsSchedulingTest = ControlPlaneTest;

HttpsClientConfig Anonymous() { return testing::TrustingCa(tls_plane::Shared().certs.ca.cert_pem); }

HttpsClientConfig Scheduler() {
  const testing::TlsTestCerts& certs = tls_plane::Shared().certs;
  return testing::WithClientCert(Anonymous(), certs.client.cert_pem, certs.client.key_pem);
}

TEST_F(TlsSchedulingTest, KubeSchedulerFiltersAndBindsThroughTesseraOverTlsWithItsClientCertificate) {
  absl::StatusOr<json> node = Node("a", 1);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];
  ASSERT_TRUE(Pod("half", "0.5").ok());

  absl::StatusOr<std::vector<json>> pods = plane().WaitForPods(
      ns(), "the pod to be bound", [](const auto& p) { return p.size() == 1 && IsBound(p[0]); });
  ASSERT_TRUE(pods.ok()) << pods.status();
  const json& pod = (*pods)[0];
  EXPECT_EQ(pod["spec"]["nodeName"], node_name);
  // Tessera bound it (the assignment annotation is its own), so the bind came
  // over TLS from a client whose certificate the CA verified.
  const std::string assignment = testing::Annotation(pod, "tessera.io/gpu-assignment");
  ASSERT_FALSE(assignment.empty()) << pod.dump();
  EXPECT_EQ(json::parse(assignment)["node"], node_name);

  std::string error;
  const HttpAnswer metrics =
      HttpsExchange(plane().TesseraPort(), Anonymous(), http::verb::get, "/metrics", "", &error);
  ASSERT_EQ(metrics.status, 200) << error;
  EXPECT_THAT(metrics.body, ::testing::ContainsRegex(R"(tessera_http_requests_total\{[^}]*verb="bind"[^}]*\} [1-9])"))
      << metrics.body;
  // kube-scheduler's extender client chose HTTP/2 (its transport offers h2
  // by ALPN), so its calls shared connections instead of one each.
  EXPECT_THAT(metrics.body, ::testing::ContainsRegex(R"(tessera_http_connections_total\{protocol="h2"\} [1-9])"))
      << metrics.body;
  // The series exists from the start at 0 (so rate() sees the first refusal).
  EXPECT_THAT(metrics.body, HasSubstr(R"(tessera_http_rejections_total{reason="unauthenticated"} 0)"))
      << "kube-scheduler's own calls were refused";
}

TEST_F(TlsSchedulingTest, ACallerWithoutAClientCertificateMayFilterButNotBind) {
  absl::StatusOr<json> node = Node("b", 1);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];
  const uint16_t port = plane().TesseraPort();
  const std::string bind = json{{"PodName", "nobody"}, {"PodNamespace", ns()}, {"PodUID", "u-1"}, {"Node", node_name}}.dump();
  std::string error;

  const HttpAnswer refused = HttpsExchange(port, Anonymous(), http::verb::post, "/scheduler/bind", bind, &error);
  EXPECT_EQ(refused.status, 403) << error;
  EXPECT_THAT(refused.body, HasSubstr("client certificate"));
  const json filter = {{"Pod", {{"metadata", {{"name", "p"}, {"namespace", ns()}, {"uid", "u-2"}}}}},
                       {"NodeNames", {node_name}}};
  EXPECT_EQ(HttpsExchange(port, Anonymous(), http::verb::post, "/scheduler/filter", filter.dump(), &error).status, 200)
      << error;
  // Plain HTTP on Tessera's port is not answered at all.
  EXPECT_EQ(testing::HttpClient(port, std::chrono::seconds(5)).Get("/healthz").status, 0);
  // A certificate from another CA does not get through the handshake.
  testing::TlsTestCertOptions other;
  other.ca_common_name = "stranger";
  absl::StatusOr<testing::TlsTestCerts> stranger = testing::TlsTestCerts::Generate(other);
  ASSERT_TRUE(stranger.ok());
  const HttpsClientConfig impostor = testing::WithClientCert(Anonymous(), stranger->client.cert_pem, stranger->client.key_pem);
  EXPECT_EQ(HttpsExchange(port, impostor, http::verb::post, "/scheduler/bind", bind, &error).status, 0);
  // kube-scheduler's certificate gets the bind to the binder, which finds no such pod.
  const HttpAnswer authenticated = HttpsExchange(port, Scheduler(), http::verb::post, "/scheduler/bind", bind, &error);
  EXPECT_EQ(authenticated.status, 200) << error;
  EXPECT_THAT(authenticated.body, HasSubstr("Error")) << "a bind for a pod that does not exist succeeded";
}

}  // namespace
}  // namespace tessera
