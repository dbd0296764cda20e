// HttpServer in TLS mode over real sockets on 127.0.0.1, with certificates
// generated at run time (test/testing/tls_test_certs.h). Every client
// operation is bounded (kIoTimeout), so a server bug fails a test instead of
// hanging it.
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "extender/server/http_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/https_client.h"
#include "test/testing/tls_server_options.h"
#include "test/testing/tls_test_certs.h"

namespace tessera {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using testing::TlsTestCertFiles;
using testing::TlsTestCerts;
using ::testing::HasSubstr;

constexpr milliseconds kIoTimeout{3000};

HttpResponse Hello(const HttpRequest& req) {
  HttpResponse res{http::status::ok, 11};
  res.body() = std::string("hello ") + std::string(req.target());
  return res;
}

TlsTestCerts MustGenerate(const std::string& ca_name) {
  testing::TlsTestCertOptions o;
  o.ca_common_name = ca_name;
  absl::StatusOr<TlsTestCerts> certs = TlsTestCerts::Generate(o);
  EXPECT_TRUE(certs.ok()) << certs.status();
  return certs.ok() ? *std::move(certs) : TlsTestCerts{};
}

void Overwrite(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

// One HTTPS GET trusting only `ca_pem`; the status, or nullopt with `error`
// set when the connection, the handshake (e.g. verification) or the exchange failed.
std::optional<int> HttpsGet(uint16_t port, const std::string& ca_pem, const std::string& target,
                            std::string* error = nullptr, std::string* body = nullptr) {
  const testing::HttpAnswer answer =
      testing::HttpsExchange(port, testing::TrustingCa(ca_pem), http::verb::get, target, "", error, kIoTimeout);
  if (answer.status == 0) return std::nullopt;
  if (body != nullptr) *body = answer.body;
  return answer.status;
}

// Writes `bytes` on a plain connection and waits for the server to close it;
// returns what came back and how long until the close (nullopt: not closed in kIoTimeout).
std::optional<std::pair<std::string, milliseconds>> PlainUntilClosed(uint16_t port, const std::string& bytes) {
  net::io_context io;
  tcp::socket socket(io);
  error_code ec;
  socket.connect({net::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return std::nullopt;
  const auto start = Clock::now();
  if (!bytes.empty()) net::write(socket, net::buffer(bytes), ec);
  std::string received;
  std::array<char, 4096> chunk;
  bool closed = false;
  std::function<void()> read = [&] {
    socket.async_read_some(net::buffer(chunk), [&](error_code rec, size_t n) {
      received.append(chunk.data(), n);
      if (rec) {
        closed = true;
        return;
      }
      read();
    });
  };
  read();
  io.run_for(kIoTimeout);
  if (!closed) return std::nullopt;
  return std::make_pair(received, std::chrono::duration_cast<milliseconds>(Clock::now() - start));
}

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = MustGenerate("tessera-test-ca-one");
    absl::StatusOr<TlsTestCertFiles> files = TlsTestCertFiles::Write(certs_);
    ASSERT_TRUE(files.ok()) << files.status();
    files_.emplace(*std::move(files));
  }

  HttpServerOptions Options() const { return testing::TlsServerOptions(*files_); }

  std::unique_ptr<HttpServer> MustStart(HttpServerOptions o) {
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(std::move(o), Hello);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  TlsTestCerts certs_;
  std::optional<TlsTestCertFiles> files_;
};

TEST_F(TlsServerTest, AnswersARequestOverTlsWithACertificateTheClientVerifies) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  std::string error, body;
  EXPECT_EQ(HttpsGet(server->port(), certs_.ca.cert_pem, "/x", &error, &body), 200) << error;
  EXPECT_EQ(body, "hello /x");
}

TEST_F(TlsServerTest, ClosesPlainHttpOnTheTlsPortAndKeepsServing) {
  std::unique_ptr<HttpServer> server = MustStart(Options());
  ASSERT_NE(server, nullptr);
  auto plain = PlainUntilClosed(server->port(), "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  ASSERT_TRUE(plain.has_value()) << "the server did not close a plain-HTTP connection";
  EXPECT_THAT(plain->first, ::testing::Not(HasSubstr("hello")));
  std::string error;
  EXPECT_EQ(HttpsGet(server->port(), certs_.ca.cert_pem, "/after", &error), 200) << error;
}

TEST_F(TlsServerTest, ClosesAClientThatNeverFinishesTheHandshakeAtTheReadTimeout) {
  HttpServerOptions o = Options();
  o.read_timeout = milliseconds(300);
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  auto silent = PlainUntilClosed(server->port(), "");
  ASSERT_TRUE(silent.has_value()) << "a silent client was not closed";
  EXPECT_GE(silent->second, milliseconds(250));
  EXPECT_TRUE(silent->first.empty());
}

TEST_F(TlsServerTest, RefusesToStartWithAKeyThatDoesNotMatchTheCertificate) {
  const TlsTestCerts other = MustGenerate("tessera-test-ca-two");
  absl::StatusOr<std::string> wrong_key = files_->WriteExtra("other.key", other.server.key_pem);
  ASSERT_TRUE(wrong_key.ok());
  HttpServerOptions o = Options();
  o.tls_key_file = *wrong_key;
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(o, Hello);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("private key"));
}

TEST_F(TlsServerTest, RefusesToStartWithOnlyACertificate) {
  HttpServerOptions o = Options();
  o.tls_key_file.clear();
  EXPECT_EQ(HttpServer::Start(o, Hello).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TlsServerTest, ServesARotatedCertificateToNewConnectionsWithoutARestart) {
  HttpServerOptions o = Options();
  o.tls_reload_interval = milliseconds(0);
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  std::string error;
  ASSERT_EQ(HttpsGet(server->port(), certs_.ca.cert_pem, "/", &error), 200) << error;

  const TlsTestCerts rotated = MustGenerate("tessera-test-ca-two");
  Overwrite(files_->server_cert(), rotated.server.cert_pem);
  Overwrite(files_->server_key(), rotated.server.key_pem);

  EXPECT_EQ(HttpsGet(server->port(), rotated.ca.cert_pem, "/", &error), 200) << error;
  EXPECT_EQ(HttpsGet(server->port(), certs_.ca.cert_pem, "/", &error), std::nullopt)
      << "the old CA still verifies: the certificate was not rotated";
}

TEST_F(TlsServerTest, KeepsTheCertificateInUseWhenTheRotatedFilesDoNotMatch) {
  HttpServerOptions o = Options();
  o.tls_reload_interval = milliseconds(0);
  std::unique_ptr<HttpServer> server = MustStart(o);
  ASSERT_NE(server, nullptr);
  const TlsTestCerts rotated = MustGenerate("tessera-test-ca-two");
  Overwrite(files_->server_cert(), rotated.server.cert_pem);  // the key not (yet) rotated
  std::string error;
  EXPECT_EQ(HttpsGet(server->port(), certs_.ca.cert_pem, "/", &error), 200) << error;
  Overwrite(files_->server_key(), rotated.server.key_pem);
  EXPECT_EQ(HttpsGet(server->port(), rotated.ca.cert_pem, "/", &error), 200) << error;
}

}  // namespace
}  // namespace tessera
