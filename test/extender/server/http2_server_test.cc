// HttpServer speaking HTTP/2 over TLS (ALPN "h2") on real sockets on
// 127.0.0.1: with nghttp2's client (test/testing/http2_client.h) and with
// curl, an independent one. The protocol's limits are tested without sockets
// in h2_connection_test.cc; here what the socket side adds: negotiation, many
// requests on one connection answered as their handlers answer, client
// certificates, drain, deadlines.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include "absl/synchronization/notification.h"
#include "extender/server/http_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/metrics/metrics.h"
#include "test/testing/http2_client.h"
#include "test/testing/https_client.h"
#include "test/testing/tls_server_options.h"
#include "test/testing/tls_test_certs.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;
using std::chrono::milliseconds;
using testing::Http2Call;
using testing::Http2Exchange;
using testing::Http2Result;
using testing::TlsTestCertFiles;
using testing::TlsTestCerts;
using ::testing::HasSubstr;

Http2Call Post(std::string target, std::string body) {
  return Http2Call{.method = http::verb::post, .target = std::move(target), .body = std::move(body)};
}

// Echoes "<method> <target> <body>"; "/late/N" answers only once N later
// requests have come in (so answers go out in another order than asked).
class EchoHandler {
 public:
  void operator()(HttpRequest req, HttpResponder respond) {
    HttpResponse res{http::status::ok, 11};
    res.body() = std::string(req.method_string()) + " " + std::string(req.target()) + " " + req.body();
    std::vector<HttpResponder> due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++seen_;
      if (req.target().starts_with("/late/")) {
        waiting_.push_back({seen_ + std::stoi(std::string(req.target().substr(6))), respond, res});
        return;
      }
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (seen_ >= it->after) {
          it->respond(it->res);
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
    }
    respond(std::move(res));
  }

 private:
  struct Waiting {
    int after;
    HttpResponder respond;
    HttpResponse res;
  };
  std::mutex mu_;
  int seen_ = 0;
  std::vector<Waiting> waiting_;
};

class Http2ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TlsTestCerts> certs = TlsTestCerts::Generate({});
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *std::move(certs);
    absl::StatusOr<TlsTestCertFiles> files = TlsTestCertFiles::Write(certs_);
    ASSERT_TRUE(files.ok()) << files.status();
    files_.emplace(*std::move(files));
  }

  HttpServerOptions Options() {
    HttpServerOptions o = testing::TlsServerOptions(*files_);
    o.metrics = &metrics_;
    return o;
  }

  std::unique_ptr<HttpServer> MustStart(HttpServerOptions o) {
    auto echo = std::make_shared<EchoHandler>();
    absl::StatusOr<std::unique_ptr<HttpServer>> server =
        HttpServer::StartAsync(std::move(o), [echo](HttpRequest req, HttpResponder respond) {
          (*echo)(std::move(req), std::move(respond));
        });
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  testing::HttpsClientConfig Client() const { return testing::TrustingCa(certs_.ca.cert_pem); }

  TlsTestCerts certs_;
  std::optional<TlsTestCertFiles> files_;
  MetricsRegistry metrics_;
};

TEST_F(Http2ServerTest, AClientOfferingH2GetsItAndEveryRequestAnsweredOnOneConnection) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  std::vector<Http2Call> calls;
  for (int i = 0; i < 50; ++i) calls.push_back(Post("/scheduler/filter", "pod " + std::to_string(i)));
  const Http2Result result = Http2Exchange(server->port(), Client(), calls);
  ASSERT_EQ(result.error, "");
  EXPECT_EQ(result.alpn, "h2");
  ASSERT_EQ(result.answers.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(result.answers[i].status, 200);
    EXPECT_EQ(result.answers[i].body, "POST /scheduler/filter pod " + std::to_string(i));
    EXPECT_EQ(result.answers[i].headers.at("content-type"), "application/json");  // the server's default
  }
  const std::string text = metrics_.Render();
  EXPECT_THAT(text, HasSubstr("tessera_http_connections_total{protocol=\"h2\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tessera_http_connections_total{protocol=\"http/1.1\"} 0\n"));
}

TEST_F(Http2ServerTest, SendsEachAnswerAsItsHandlerAnswersNotInTheOrderAsked) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  // The first waits for the two after it; on HTTP/1.1 it would hold them up.
  const Http2Result result =
      Http2Exchange(server->port(), Client(), {Post("/late/2", "a"), Post("/b", "b"), Post("/c", "c")});
  ASSERT_EQ(result.error, "");
  ASSERT_EQ(result.answers.size(), 3u);
  EXPECT_EQ(result.answers[0].body, "POST /late/2 a");
  EXPECT_EQ(result.answers[1].body, "POST /b b");
  EXPECT_EQ(result.answers[2].body, "POST /c c");
}

TEST_F(Http2ServerTest, AClientOfferingOnlyHttp11GetsHttp11) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Http2Exchange(server->port(), Client(), {}, {"http/1.1"}).alpn, "http/1.1");
  std::string error;
  const testing::HttpAnswer answer =
      testing::HttpsExchange(server->port(), Client(), http::verb::post, "/x", "y", &error);
  EXPECT_EQ(answer.status, 200) << error;
  EXPECT_EQ(answer.body, "POST /x y");
  EXPECT_THAT(metrics_.Render(), HasSubstr("tessera_http_connections_total{protocol=\"http/1.1\"} 2\n"));
}

TEST_F(Http2ServerTest, WithHttp2OffTheServerChoosesNoProtocolAndSpeaksHttp11) {
  HttpServerOptions o = Options();
  o.http2 = false;
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Http2Exchange(server->port(), Client(), {Post("/x", "y")}).alpn, "");
  std::string error;
  EXPECT_EQ(testing::HttpsExchange(server->port(), Client(), http::verb::get, "/x", "", &error).status, 200) << error;
}

TEST_F(Http2ServerTest, AVerbThatNeedsAClientCertificateIsRefusedPerRequestOnTheSameConnection) {
  HttpServerOptions o = Options();
  o.tls_client_ca_file = files_->ca_cert();
  o.needs_client_cert = [](const HttpRequest& req) { return req.target() == "/scheduler/bind"; };
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  const std::vector<Http2Call> calls = {Post("/scheduler/bind", "{}"), Post("/scheduler/filter", "{}")};
  const Http2Result anonymous = Http2Exchange(server->port(), Client(), calls);
  ASSERT_EQ(anonymous.error, "");
  EXPECT_EQ(anonymous.answers[0].status, 403);
  EXPECT_THAT(anonymous.answers[0].body, HasSubstr("client certificate"));
  EXPECT_EQ(anonymous.answers[1].status, 200);
  const Http2Result scheduler = Http2Exchange(
      server->port(), testing::WithClientCert(Client(), certs_.client.cert_pem, certs_.client.key_pem), calls);
  ASSERT_EQ(scheduler.error, "");
  EXPECT_EQ(scheduler.answers[0].status, 200);
  EXPECT_EQ(scheduler.answers[1].status, 200);
  EXPECT_THAT(metrics_.Render(), HasSubstr("tessera_http_rejections_total{reason=\"unauthenticated\"} 1\n"));
}

TEST_F(Http2ServerTest, ABodyOverTheLimitIsAnswered413AndTheServerServesOn) {
  HttpServerOptions o = Options();
  o.body_limit = 1000;
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  const Http2Result result =
      Http2Exchange(server->port(), Client(), {Post("/big", std::string(5000, 'x')), Post("/small", "ok")});
  ASSERT_EQ(result.error, "");
  EXPECT_EQ(result.answers[0].status, 413);
  EXPECT_THAT(result.answers[0].body, HasSubstr("1000-byte limit"));
  EXPECT_EQ(result.answers[1].status, 200);
  EXPECT_THAT(metrics_.Render(), HasSubstr("tessera_http_rejections_total{reason=\"body_too_large\"} 1\n"));
}

TEST_F(Http2ServerTest, ARequestThatNeverEndsIsResetAtTheReadTimeout) {
  HttpServerOptions o = Options();
  o.read_timeout = milliseconds(200);
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  Http2Call stuck = Post("/stuck", "half");
  stuck.leave_open = true;
  const auto start = std::chrono::steady_clock::now();
  const Http2Result result = Http2Exchange(server->port(), Client(), {stuck, Post("/ok", "x")});
  ASSERT_EQ(result.error, "");
  EXPECT_EQ(result.answers[0].status, 0);
  EXPECT_EQ(result.answers[0].reset_code, 8u);  // CANCEL
  EXPECT_EQ(result.answers[1].status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(Http2ServerTest, DrainAnswersTheRequestsInFlightThenClosesWithAGoaway) {
  // The handler answers from a thread of its own, only once the drain has
  // begun; the drain starts once both requests are in its hands.
  std::vector<std::thread> late;
  std::mutex late_mu;
  std::promise<void> both_taken;
  absl::Notification drain_begun;
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::StartAsync(Options(), [&](HttpRequest req, HttpResponder respond) {
        std::lock_guard<std::mutex> lock(late_mu);
        late.emplace_back([body = req.body(), respond, &drain_begun] {
          // Bounded, so that a test failing before the drain still ends.
          (void)drain_begun.WaitForNotificationWithTimeout(absl::Seconds(10));
          HttpResponse res{http::status::ok, 11};
          res.body() = "late " + body;
          respond(std::move(res));
        });
        if (late.size() == 2) both_taken.set_value();
      });
  ASSERT_TRUE(server.ok()) << server.status();
  const auto start = std::chrono::steady_clock::now();
  std::optional<Http2Result> result;
  std::thread client(
      [&] { result = Http2Exchange((*server)->port(), Client(), {Post("/held", "a"), Post("/held", "b")}); });
  ASSERT_EQ(both_taken.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  (*server)->Drain();
  drain_begun.Notify();
  client.join();
  (*server)->Wait();  // the io threads exit once the connection is done
  const auto took = std::chrono::steady_clock::now() - start;
  {
    std::lock_guard<std::mutex> lock(late_mu);
    for (std::thread& t : late) t.join();
  }
  ASSERT_TRUE(result.has_value());
  ASSERT_EQ(result->error, "");
  EXPECT_TRUE(result->goaway);
  EXPECT_EQ(result->answers[0].body, "late a");
  EXPECT_EQ(result->answers[1].body, "late b");
  EXPECT_LT(took, std::chrono::seconds(10)) << "the drain waited for its timeout (25 s), not for the answers";
}

TEST_F(Http2ServerTest, CurlSpeaksHttp2ToTheServer) {
  if (std::system("curl --version 2>/dev/null | grep -q HTTP2") != 0) {
    GTEST_SKIP() << "this curl has no HTTP/2 (Debian 12's has; scripts/install-deps.sh installs curl)";
  }
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  const std::string command = "curl -s --http2 --cacert " + files_->ca_cert() +
                              " -w ' %{http_version}' -d '{\"a\":1}' https://127.0.0.1:" +
                              std::to_string(server->port()) + "/scheduler/filter";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char chunk[256];
  while (size_t n = fread(chunk, 1, sizeof chunk, pipe)) out.append(chunk, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  EXPECT_EQ(out, "POST /scheduler/filter {\"a\":1} 2");
}

}  // namespace
}  // namespace tessera
