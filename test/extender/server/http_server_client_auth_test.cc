// HttpServer authenticating its clients by certificate (tls_client_ca_file,
// needs_client_cert, tls_require_client_cert), over real sockets on
// 127.0.0.1 with certificates generated at run time.
#include <atomic>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "extender/server/http_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/metrics/metrics.h"
#include "test/testing/https_client.h"
#include "test/testing/tls_server_options.h"
#include "test/testing/tls_test_certs.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;
using std::chrono::milliseconds;
using testing::HttpAnswer;
using testing::HttpsClientConfig;
using testing::HttpsExchange;
using testing::TlsTestCertFiles;
using testing::TlsTestCerts;
using ::testing::HasSubstr;

TlsTestCerts MustGenerate(const std::string& ca_name) {
  testing::TlsTestCertOptions o;
  o.ca_common_name = ca_name;
  absl::StatusOr<TlsTestCerts> certs = TlsTestCerts::Generate(o);
  EXPECT_TRUE(certs.ok()) << certs.status();
  return certs.ok() ? *std::move(certs) : TlsTestCerts{};
}

class ClientAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = MustGenerate("tessera-test-ca-one");
    absl::StatusOr<TlsTestCertFiles> files = TlsTestCertFiles::Write(certs_);
    ASSERT_TRUE(files.ok()) << files.status();
    files_.emplace(*std::move(files));
  }

  // TLS with the client CA; /bind needs a client certificate, as with
  // --tls-client-auth=verbs.
  HttpServerOptions Options() {
    HttpServerOptions o = testing::TlsServerOptions(*files_);
    o.tls_client_ca_file = files_->ca_cert();
    o.needs_client_cert = [](const HttpRequest& r) { return r.target() == "/bind"; };
    o.metrics = &metrics_;
    return o;
  }

  std::unique_ptr<HttpServer> MustStart(HttpServerOptions o) {
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(std::move(o), [this](const HttpRequest& req) {
          ++handled_;
          HttpResponse res{http::status::ok, 11};
          res.body() = R"({"Error":""})";
          (void)req;
          return res;
        });
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  // The server verified against this test's CA; `client` (may be null) presented.
  HttpsClientConfig Client(const TlsTestCerts* client) const {
    const HttpsClientConfig c = testing::TrustingCa(certs_.ca.cert_pem);
    return client == nullptr ? c : testing::WithClientCert(c, client->client.cert_pem, client->client.key_pem);
  }

  HttpAnswer Post(const HttpServer& server, const HttpsClientConfig& client, const std::string& target,
                  std::string* error = nullptr) {
    return HttpsExchange(server.port(), client, http::verb::post, target, "{}", error);
  }

  TlsTestCerts certs_;
  std::optional<TlsTestCertFiles> files_;
  MetricsRegistry metrics_;
  std::atomic<int> handled_{0};
};

TEST_F(ClientAuthTest, AnswersTheOpenRequestsOfAClientWithoutACertificate) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  std::string error;
  EXPECT_EQ(Post(*server, Client(nullptr), "/filter", &error).status, 200) << error;
  EXPECT_EQ(HttpsExchange(server->port(), Client(nullptr), http::verb::get, "/healthz", "", &error).status, 200)
      << error;
}

TEST_F(ClientAuthTest, RefusesARequestThatNeedsACertificateWith403AndAJsonReasonBeforeTheHandler) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  std::string error;
  const HttpAnswer answer = Post(*server, Client(nullptr), "/bind", &error);
  ASSERT_EQ(answer.status, 403) << error;
  EXPECT_EQ(answer.content_type, "application/json");
  // The shape of kube-scheduler's ExtenderBindingResult: {"Error": reason}.
  const nlohmann::json body = nlohmann::json::parse(answer.body);
  EXPECT_THAT(body.at("Error").get<std::string>(), HasSubstr("client certificate"));
  EXPECT_EQ(handled_.load(), 0) << "the handler saw an unauthenticated bind";
  EXPECT_THAT(metrics_.Render(), HasSubstr(R"(tessera_http_rejections_total{reason="unauthenticated"} 1)"));
}

TEST_F(ClientAuthTest, LetsAClientWhoseCertificateTheCaVerifiesMakeThatRequest) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  std::string error;
  EXPECT_EQ(Post(*server, Client(&certs_), "/bind", &error).status, 200) << error;
  EXPECT_EQ(handled_.load(), 1);
}

TEST_F(ClientAuthTest, ClosesAClientWhoseCertificateAnotherCaIssued) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  const TlsTestCerts stranger = MustGenerate("tessera-test-ca-stranger");
  std::string error;
  EXPECT_EQ(Post(*server, Client(&stranger), "/filter", &error).status, 0)
      << "a certificate of an unknown CA was accepted";
  EXPECT_EQ(handled_.load(), 0);
  EXPECT_EQ(Post(*server, Client(&certs_), "/filter", &error).status, 200) << error;
}

TEST_F(ClientAuthTest, WithACertificateRequiredRefusesEveryClientWithoutOneAtTheHandshake) {
  HttpServerOptions o = Options();
  o.needs_client_cert = nullptr;
  o.tls_require_client_cert = true;
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  std::string error;
  EXPECT_EQ(Post(*server, Client(nullptr), "/filter", &error).status, 0);
  EXPECT_EQ(handled_.load(), 0);
  EXPECT_EQ(Post(*server, Client(&certs_), "/filter", &error).status, 200) << error;
}

TEST_F(ClientAuthTest, TakesUpARotatedClientCaWithoutARestart) {
  HttpServerOptions o = Options();
  o.tls_reload_interval = milliseconds(0);
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  const TlsTestCerts next = MustGenerate("tessera-test-ca-next");
  {
    // A CA bundle during rotation: the old CA and the new one.
    std::ofstream out(files_->ca_cert(), std::ios::binary | std::ios::app);
    out << next.ca.cert_pem;
  }
  std::string error;
  EXPECT_EQ(Post(*server, Client(&next), "/bind", &error).status, 200) << error;
  EXPECT_EQ(Post(*server, Client(&certs_), "/bind", &error).status, 200) << error;
}

struct BadOptionsCase {
  std::string name;
  std::function<void(HttpServerOptions&)> change;
  std::string message;
};

TEST_F(ClientAuthTest, RefusesToStartWithClientAuthenticationItCannotDo) {
  const std::vector<BadOptionsCase> cases = {
      {"a client CA without TLS",
       [](HttpServerOptions& o) { o.tls_cert_file.clear(), o.tls_key_file.clear(), o.needs_client_cert = nullptr; },
       "client CA needs TLS"},
      {"requests needing a certificate without a client CA", [](HttpServerOptions& o) { o.tls_client_ca_file.clear(); },
       "client CA file"},
      {"a required certificate without a client CA",
       [](HttpServerOptions& o) {
         o.tls_client_ca_file.clear(), o.needs_client_cert = nullptr, o.tls_require_client_cert = true;
       },
       "client CA file"},
      {"an unreadable client CA", [](HttpServerOptions& o) { o.tls_client_ca_file = "/nonexistent/ca.crt"; },
       "client CA file"},
  };
  for (const BadOptionsCase& c : cases) {
    SCOPED_TRACE(c.name);
    HttpServerOptions o = Options();
    c.change(o);
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::Start(o, [](const HttpRequest&) { return HttpResponse{http::status::ok, 11}; });
    ASSERT_FALSE(server.ok());
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(server.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace tessera
