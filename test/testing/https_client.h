// One HTTPS exchange over a real socket to 127.0.0.1, for tests of TLS
// listeners: the server verified against a given CA (and its name checked),
// optionally a client certificate presented. Bounded by a timeout, so a server
// that never answers fails a test instead of hanging it.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "test/testing/http_client.h"

namespace tessera::testing {

/// How the client checks the server and what it shows of itself.
struct HttpsClientConfig {
  /// PEM CA the server's certificate must chain to.
  std::string ca_pem;
  /// The name the server's certificate must carry (an IP SAN for an address).
  std::string server_name = "127.0.0.1";
  /// Both set: the client certificate and key presented when asked (PEM).
  std::string client_cert_pem;
  std::string client_key_pem;
};

/// A client that trusts `ca_pem` and shows no certificate of its own.
inline HttpsClientConfig TrustingCa(std::string ca_pem) {
  HttpsClientConfig c;
  c.ca_pem = std::move(ca_pem);
  return c;
}

/// `config` presenting the client certificate `cert_pem` with `key_pem`.
inline HttpsClientConfig WithClientCert(HttpsClientConfig config, std::string cert_pem, std::string key_pem) {
  config.client_cert_pem = std::move(cert_pem);
  config.client_key_pem = std::move(key_pem);
  return config;
}

/// Sends one request on a fresh connection and reads the answer.
/// \return the answer; status 0 with `error` set when the connection, the
///         handshake (a certificate that does not verify, on either side) or
///         the exchange failed, or `timeout` passed.
inline HttpAnswer HttpsExchange(uint16_t port, const HttpsClientConfig& config, boost::beast::http::verb method,
                                const std::string& target, const std::string& body = "",
                                std::string* error = nullptr,
                                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  namespace net = boost::asio;
  namespace http = boost::beast::http;
  using boost::system::error_code;
  HttpAnswer answer;
  auto fail = [&](const std::string& what) {
    if (error != nullptr) *error = what;
    return answer;
  };
  net::io_context io;
  net::ssl::context ctx(net::ssl::context::tls_client);
  error_code ec;
  ctx.add_certificate_authority(net::buffer(config.ca_pem), ec);
  if (ec) return fail("bad CA: " + ec.message());
  if (!config.client_cert_pem.empty()) {
    ctx.use_certificate_chain(net::buffer(config.client_cert_pem), ec);
    if (!ec) ctx.use_private_key(net::buffer(config.client_key_pem), net::ssl::context::pem, ec);
    if (ec) return fail("bad client certificate: " + ec.message());
  }
  ctx.set_verify_mode(net::ssl::verify_peer);
  ctx.set_verify_callback(net::ssl::host_name_verification(config.server_name));
  net::ssl::stream<net::ip::tcp::socket> stream(io, ctx);
  stream.next_layer().connect({net::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return fail("connect: " + ec.message());
  http::request<http::string_body> req(method, target, 11);
  req.set(http::field::host, config.server_name);
  if (method == http::verb::post) req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  error_code result;
  bool done = false;
  stream.async_handshake(net::ssl::stream_base::client, [&](error_code hs) {
    if (hs) {
      result = hs, done = true;
      return;
    }
    http::async_write(stream, req, [&](error_code wrote, size_t) {
      if (wrote) {
        result = wrote, done = true;
        return;
      }
      http::async_read(stream, buffer, res, [&](error_code read, size_t) { result = read, done = true; });
    });
  });
  io.run_for(timeout);
  if (!done) return fail("timed out");
  if (result) return fail(result.message());
  answer.status = res.result_int();
  answer.body = res.body();
  answer.content_type = std::string(res[http::field::content_type]);
  return answer;
}

}  // namespace tessera::testing
