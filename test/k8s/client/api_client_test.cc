// The HTTPS client against the fake API server: TLS verification, the ways
// to authenticate, keep-alive reuse across a server restart, deadlines.
#include "k8s/client/api_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "k8s/client/connection_warmer.h"
#include "k8s/client/pod_api.h"
#include "test/testing/fake_api_server.h"
#include "test/testing/fake_clock.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;
using testing::FakeApiServer;

testing::FakeApiServerOptions WithToken(bool client_cert = false) {
  testing::FakeApiServerOptions o;
  o.bearer_token = "client-test-token";
  o.require_client_cert = client_cert;
  return o;
}

absl::StatusOr<std::unique_ptr<ApiClient>> ClientFromKubeconfig(FakeApiServer& server,
                                                                const testing::KubeconfigOptions& options) {
  absl::StatusOr<std::string> path = server.WriteKubeconfig(options);
  if (!path.ok()) return path.status();
  absl::StatusOr<ApiServerConfig> config = LoadKubeconfig(*path);
  if (!config.ok()) return config.status();
  ApiClientOptions client_options;
  client_options.request_timeout = absl::Seconds(2);
  return ApiClient::Create(*config, client_options);
}

testing::KubeconfigOptions Kubeconfig(bool inline_data, bool token, bool client_cert, bool insecure) {
  testing::KubeconfigOptions o;
  o.inline_data = inline_data;
  o.token = token;
  o.client_cert = client_cert;
  o.insecure_skip_tls_verify = insecure;
  return o;
}

struct AuthCase {
  std::string name;
  bool server_wants_client_cert;
  testing::KubeconfigOptions kubeconfig;
  int want_status;        // 0: the connection itself must fail
  std::string want_error;
};

class Authentication : public ::testing::TestWithParam<AuthCase> {};

TEST_P(Authentication, TheServerAnswersOnlyAProperlyAuthenticatedVerifiedClient) {
  const AuthCase& c = GetParam();
  FakeApiServer server(WithToken(c.server_wants_client_cert));
  ASSERT_TRUE(server.Start().ok());
  absl::StatusOr<std::unique_ptr<ApiClient>> client = ClientFromKubeconfig(server, c.kubeconfig);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<ApiResponse> r = (*client)->Get("/api/v1/nodes");
  if (c.want_status == 0) {
    // TLS 1.3 reports a missing client certificate after the handshake, as an alert.
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.want_error));
  } else {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, c.want_status) << r->body;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kubeconfigs, Authentication,
    ::testing::Values(
        AuthCase{"TokenAndInlineCa", false, Kubeconfig(true, true, false, false), 200, ""},
        AuthCase{"TokenAndCaFile", false, Kubeconfig(false, true, false, false), 200, ""},
        AuthCase{"NoTokenIsUnauthorized", false, Kubeconfig(true, false, false, false), 401, ""},
        AuthCase{"ClientCertificateWhenRequired", true, Kubeconfig(true, true, true, false), 200, ""},
        AuthCase{"NoClientCertificateWhenRequiredFailsTheHandshake", true, Kubeconfig(true, true, false, false), 0,
                 "certificate required"},
        AuthCase{"InsecureSkipVerifyOnlyWhenSet", false, Kubeconfig(true, true, false, true), 200, ""}),
    [](const auto& info) { return info.param.name; });

TEST(ApiClient, AServerSignedByAnotherCaIsRefused) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  testing::TlsTestCertOptions other;
  other.ca_common_name = "someone-else";
  absl::StatusOr<testing::TlsTestCerts> foreign = testing::TlsTestCerts::Generate(other);
  ASSERT_TRUE(foreign.ok());
  ApiServerConfig config;
  config.host = "127.0.0.1";
  config.port = std::to_string(server.port());
  config.ca_pem = foreign->ca.cert_pem;
  config.token = "client-test-token";
  auto client = *ApiClient::Create(config);
  EXPECT_THAT(std::string(client->Get("/api/v1/nodes").status().message()), HasSubstr("TLS handshake"));
}

TEST(ApiClient, AKeepAliveConnectionClosedByAServerRestartIsReplacedTransparently) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  testing::KubeconfigOptions kubeconfig;
  auto client = *ClientFromKubeconfig(server, kubeconfig);
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  server.Stop();
  ASSERT_TRUE(server.Start().ok());
  absl::StatusOr<ApiResponse> again = client->Get("/api/v1/nodes");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->status, 200);
}

absl::StatusOr<std::unique_ptr<ApiClient>> ClientWith(FakeApiServer& server, ApiClientOptions options) {
  absl::StatusOr<std::string> path = server.WriteKubeconfig({});
  if (!path.ok()) return path.status();
  absl::StatusOr<ApiServerConfig> config = LoadKubeconfig(*path);
  if (!config.ok()) return config.status();
  return ApiClient::Create(*config, options);
}

// Issue 46: a write that lands while its answer is lost, on a keep-alive
// connection reused for it, is sent again only where a repeat is safe.
int PodPatches(const FakeApiServer& server) {
  int n = 0;
  for (const testing::RecordedRequest& r : server.Requests()) n += r.method == "PATCH" ? 1 : 0;
  return n;
}

TEST(ApiClient, AWriteWhoseAnswerIsLostOnAReusedConnectionIsSentAgainOnlyWhereThatIsSafe) {
  for (const bool retry : {true, false}) {
    SCOPED_TRACE(retry ? "retried (the default)" : "not retried (a lease's client)");
    FakeApiServer server(WithToken());
    ASSERT_TRUE(server.Start().ok());
    ASSERT_TRUE(server.AddPod(FakeApiServer::MinimalPod("ml", "p")).ok());
    ApiClientOptions options;
    options.request_timeout = absl::Seconds(5);
    options.retry_on_reused_connection = retry;
    auto client = *ClientWith(server, options);
    ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);  // a keep-alive connection, idle now
    testing::RequestMatch patch;
    patch.method = "PATCH";
    server.AnswerNothingNext(patch);
    absl::StatusOr<ApiResponse> r = client->Send("PATCH", "/api/v1/namespaces/ml/pods/p",
                                                 R"({"metadata":{"labels":{"a":"b"}}})",
                                                 "application/merge-patch+json");
    if (retry) {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->status, 200);
      EXPECT_EQ(PodPatches(server), 2) << "landed once unanswered, then again";
    } else {
      EXPECT_FALSE(r.ok()) << "the caller hears the connection broke";
      EXPECT_EQ(PodPatches(server), 1);
    }
    EXPECT_EQ((*server.Pod("ml", "p"))["metadata"]["labels"]["a"], "b") << "the first one landed";
  }
}

TEST(ApiClient, ABurstOfRequestsUsesTheConnectionsKeptWarmAndOpensNoneOfItsOwn) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  auto client = *ClientWith(server, {});
  absl::StatusOr<size_t> opened = client->KeepWarm(4, absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(*opened, 4u);
  EXPECT_EQ(client->idle_connections(), 4u);
  EXPECT_EQ(server.AcceptedConnections(), 4);

  // Four requests in flight at once, as four binds are.
  testing::RequestMatch nodes;
  nodes.path_prefix = "/api/v1/nodes";
  server.HoldNext(nodes, 4);
  std::vector<std::thread> burst;
  std::atomic<int> answered{0};
  for (int i = 0; i < 4; ++i) {
    burst.emplace_back([&] {
      absl::StatusOr<ApiResponse> r = client->Get("/api/v1/nodes");
      if (r.ok() && r->status == 200) ++answered;
    });
  }
  EXPECT_TRUE(server.WaitForHeldRequests(4));
  EXPECT_EQ(server.HeldRequests(), 4);
  server.ReleaseHeld();
  for (std::thread& t : burst) t.join();
  EXPECT_EQ(answered.load(), 4);
  EXPECT_EQ(server.AcceptedConnections(), 4) << "the burst opened connections of its own";
  EXPECT_EQ(*client->KeepWarm(4, absl::Now() + absl::Seconds(10)), 0u) << "all four came back to the pool";
}

// Threads of this process now (each a /proc/self/task entry).
size_t ThreadsOfThisProcess() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

absl::StatusOr<std::unique_ptr<ApiClient>> ClientForHost(FakeApiServer& server, const std::string& host) {
  absl::StatusOr<std::string> path = server.WriteKubeconfig({});
  if (!path.ok()) return path.status();
  absl::StatusOr<ApiServerConfig> config = LoadKubeconfig(*path);
  if (!config.ok()) return config.status();
  config->host = host;
  config->insecure_skip_tls_verify = true;  // the test certificate names 127.0.0.1 only
  return ApiClient::Create(*config, {});
}

TEST(ApiClient, ConnectionsToAnAddressStartNoThreadOfTheirOwnAndToANameTheyStillConnect) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  auto by_address = *ClientForHost(server, "127.0.0.1");
  const size_t before = ThreadsOfThisProcess();
  ASSERT_EQ(*by_address->KeepWarm(8, absl::Now() + absl::Seconds(10)), 8u);
  EXPECT_EQ(ThreadsOfThisProcess(), before) << "a lookup thread idles beside each connection";
  EXPECT_EQ(by_address->Get("/api/v1/nodes")->status, 200);

  // A name is looked up (Asio's lookup thread for the connection) and works.
  auto by_name = *ClientForHost(server, "localhost");
  ASSERT_EQ(*by_name->KeepWarm(1, absl::Now() + absl::Seconds(10)), 1u);
  EXPECT_EQ(by_name->Get("/api/v1/nodes")->status, 200);
}

TEST(ApiClient, AConnectionIdlePastItsAgeIsReplacedNotReused) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  testing::FakeClock clock;
  ApiClientOptions options;
  options.max_idle_age = absl::Milliseconds(200);
  options.clock = &clock;
  auto client = *ClientWith(server, options);
  ASSERT_EQ(*client->KeepWarm(2, absl::Now() + absl::Seconds(10)), 2u);
  clock.Advance(absl::Milliseconds(300));
  ASSERT_EQ(client->Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(server.AcceptedConnections(), 3) << "the request went out on a connection the server may have closed";
  EXPECT_EQ(client->idle_connections(), 1u) << "the two stale ones are closed, the request's one kept";
  EXPECT_EQ(*client->KeepWarm(2, absl::Now() + absl::Seconds(10)), 1u);
  EXPECT_EQ(server.AcceptedConnections(), 4);
}

TEST(ApiClient, KeepingConnectionsWarmWithTheServerDownIsAnErrorThatOpensNothing) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  auto client = *ClientWith(server, {});
  server.Stop();
  absl::StatusOr<size_t> opened = client->KeepWarm(3, absl::Now() + absl::Seconds(5));
  EXPECT_FALSE(opened.ok());
  EXPECT_EQ(client->idle_connections(), 0u);
}

TEST(ConnectionWarmer, OpensItsConnectionsOnItsOwnAndStopsPromptly) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  auto client = *ClientWith(server, {});
  testing::FakeClock clock;
  auto warmer = std::make_unique<ConnectionWarmer>(*client, 3, absl::Seconds(30), clock);
  ASSERT_TRUE(clock.WaitForWaiters(1)) << "no first round";  // done: it waits for the next
  EXPECT_EQ(client->idle_connections(), 3u);
  EXPECT_EQ(server.AcceptedConnections(), 3);
  // The fake clock never lets the 30 s pass: only the stop can end the wait.
  const absl::Time stopping = absl::Now();
  warmer.reset();
  EXPECT_LT(absl::Now() - stopping, absl::Seconds(5)) << "stopping slept out the 30 s period";
}

TEST(ApiClient, ASlowAnswerHitsTheRequestDeadline) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  testing::KubeconfigOptions kubeconfig;
  auto client = *ClientFromKubeconfig(server, kubeconfig);  // 2 s request timeout
  testing::RequestMatch slow;
  slow.path_prefix = "/api/v1/nodes";
  server.DelayNext(slow, std::chrono::milliseconds(4000));
  const absl::Time start = absl::Now();
  absl::StatusOr<ApiResponse> r = client->Get("/api/v1/nodes");
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3.5));
}

TEST(KubePodApi, MapsApiServerAnswersToErrorsBindUnderstands) {
  FakeApiServer server(WithToken());
  ASSERT_TRUE(server.Start().ok());
  testing::KubeconfigOptions kubeconfig;
  auto client = *ClientFromKubeconfig(server, kubeconfig);
  KubePodApi api(*client);
  const nlohmann::json pod = *server.AddPod(FakeApiServer::MinimalPod("ml", "p"));
  const PodRef ref{"ml", "p", pod["metadata"]["uid"]};

  EXPECT_TRUE(absl::IsNotFound(api.GetPod("ml", "missing", absl::InfiniteFuture()).status()));
  absl::StatusOr<PodRecord> read = api.GetPod("ml", "p", absl::InfiniteFuture());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->uid, ref.uid);

  // The uid in the patch is a precondition.
  EXPECT_TRUE(absl::IsFailedPrecondition(api.Annotate({"ml", "p", "another-uid"}, {{"tessera.io/x", "1"}})));
  ASSERT_TRUE(api.Annotate(ref, {{"tessera.io/x", "1"}, {"tessera.io/y", "a \"quoted\" value"}}).ok());
  EXPECT_EQ((*server.Pod("ml", "p"))["metadata"]["annotations"]["tessera.io/y"], "a \"quoted\" value");

  // The Binding's uid is a precondition too, and its annotations land on the
  // pod in the same write.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      api.Bind({"ml", "p", "another-uid"}, "n1", {{"tessera.io/z", "1"}}, absl::InfiniteFuture())));
  EXPECT_FALSE((*server.Pod("ml", "p"))["metadata"]["annotations"].contains("tessera.io/z"));
  ASSERT_TRUE(api.Bind(ref, "n1", {{"tessera.io/z", "bound \"with\" it"}}, absl::InfiniteFuture()).ok());
  EXPECT_EQ((*server.Pod("ml", "p"))["spec"]["nodeName"], "n1");
  EXPECT_EQ((*server.Pod("ml", "p"))["metadata"]["annotations"]["tessera.io/z"], "bound \"with\" it");
  EXPECT_TRUE(absl::IsFailedPrecondition(api.Bind(ref, "n2", {}, absl::InfiniteFuture())));  // already bound
}

}  // namespace
}  // namespace tessera::k8s
