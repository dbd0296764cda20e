// What the HTTP server's protocols cost a caller, over real sockets on
// 127.0.0.1 with a handler that only echoes (the verbs' own work is in
// extender_benchmark): a filter-sized POST (2 KiB) answered, per request.
//
//   Http11Plain/KeepAlive      one HTTP/1.1 connection, request after request
//   Http11Tls/KeepAlive        the same over TLS
//   Http11Tls/NewConnection    a TLS handshake per request: what kube-scheduler's
//                              HTTP/1.1 extender client paid in a burst (it keeps
//                              two idle connections; binds in flight hold others)
//   Http2Tls/Streams:N         HTTP/2 over TLS, one connection, N requests at
//                              once (time per request): kube-scheduler over TLS now
//
// Certificates are ECDSA P-256, as the chart's. Client and server share the
// machine's cores, so these are round trips, not server capacity.
#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "extender/server/http_server.h"
#include "test/testing/http2_client.h"
#include "test/testing/tls_test_certs.h"

namespace tessera {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using TlsStream = net::ssl::stream<tcp::socket>;

const std::string& Body() {
  static const std::string body(2048, 'x');
  return body;
}

HttpResponse Echo(const HttpRequest& req) {
  HttpResponse res{http::status::ok, 11};
  res.body() = std::string(req.body().substr(0, 64));
  return res;
}

// One server (plain or TLS) for the whole binary, and the client's TLS context.
struct Servers {
  Servers() {
    absl::StatusOr<testing::TlsTestCerts> generated = testing::TlsTestCerts::Generate({});
    if (!generated.ok()) return;
    certs = *std::move(generated);
    absl::StatusOr<testing::TlsTestCertFiles> written = testing::TlsTestCertFiles::Write(certs);
    if (!written.ok()) return;
    files.emplace(*std::move(written));
    HttpServerOptions o;
    o.port = 0;
    absl::StatusOr<std::unique_ptr<HttpServer>> p = HttpServer::Start(o, Echo);
    o.tls_cert_file = files->server_cert();
    o.tls_key_file = files->server_key();
    absl::StatusOr<std::unique_ptr<HttpServer>> t = HttpServer::Start(o, Echo);
    if (!p.ok() || !t.ok()) return;
    plain = *std::move(p);
    tls = *std::move(t);
    client_ctx.add_certificate_authority(net::buffer(certs.ca.cert_pem));
    client_ctx.set_verify_mode(net::ssl::verify_peer);
  }
  testing::TlsTestCerts certs;
  std::optional<testing::TlsTestCertFiles> files;
  std::unique_ptr<HttpServer> plain;
  std::unique_ptr<HttpServer> tls;
  net::ssl::context client_ctx{net::ssl::context::tls_client};
};

Servers& GetServers() {
  static Servers* servers = new Servers();
  return *servers;
}

http::request<http::string_body> Request() {
  http::request<http::string_body> req(http::verb::post, "/scheduler/filter", 11);
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = Body();
  req.prepare_payload();
  return req;
}

template <class Stream>
bool RoundTrip(Stream& stream, boost::beast::flat_buffer& buffer) {
  http::request<http::string_body> req = Request();
  boost::system::error_code ec;
  http::write(stream, req, ec);
  if (ec) return false;
  http::response<http::string_body> res;
  http::read(stream, buffer, res, ec);
  return !ec && res.result() == http::status::ok;
}

void BM_Http11Plain(benchmark::State& state) {
  Servers& s = GetServers();
  if (!s.plain) return state.SkipWithError("no server");
  net::io_context io;
  tcp::socket socket(io);
  socket.connect({net::ip::make_address("127.0.0.1"), s.plain->port()});
  socket.set_option(tcp::no_delay(true));
  boost::beast::flat_buffer buffer;
  for (auto _ : state) {
    if (!RoundTrip(socket, buffer)) return state.SkipWithError("exchange failed");
  }
}

// A connection per request, as kube-scheduler's plain-HTTP transport often
// opens one when its binds hold the kept ones.
void BM_Http11PlainNewConnection(benchmark::State& state) {
  Servers& s = GetServers();
  if (!s.plain) return state.SkipWithError("no server");
  net::io_context io;
  boost::beast::flat_buffer buffer;
  for (auto _ : state) {
    tcp::socket socket(io);
    boost::system::error_code ec;
    socket.connect({net::ip::make_address("127.0.0.1"), s.plain->port()}, ec);
    if (ec) return state.SkipWithError("connect failed");
    socket.set_option(tcp::no_delay(true));
    buffer.clear();
    if (!RoundTrip(socket, buffer)) return state.SkipWithError("exchange failed");
    // Closed with a reset: tens of thousands of sockets in TIME_WAIT would run
    // the loopback out of ports.
    socket.set_option(net::socket_base::linger(true, 0), ec);
  }
}

bool TlsConnect(Servers& s, net::io_context& io, std::optional<TlsStream>& stream, const char* alpn) {
  stream.emplace(io, s.client_ctx);
  if (alpn != nullptr) {
    const std::string wire = std::string(1, static_cast<char>(std::strlen(alpn))) + alpn;
    SSL_set_alpn_protos(stream->native_handle(), reinterpret_cast<const unsigned char*>(wire.data()),
                        static_cast<unsigned>(wire.size()));
  }
  boost::system::error_code ec;
  stream->next_layer().connect({net::ip::make_address("127.0.0.1"), s.tls->port()}, ec);
  if (ec) return false;
  stream->next_layer().set_option(tcp::no_delay(true));
  stream->handshake(net::ssl::stream_base::client, ec);
  return !ec;
}

void Http11Tls(benchmark::State& state, bool new_connection) {
  Servers& s = GetServers();
  if (!s.tls) return state.SkipWithError("no server");
  net::io_context io;
  std::optional<TlsStream> stream;
  boost::beast::flat_buffer buffer;
  if (!new_connection && !TlsConnect(s, io, stream, nullptr)) return state.SkipWithError("connect failed");
  for (auto _ : state) {
    if (new_connection) {
      buffer.clear();
      if (!TlsConnect(s, io, stream, nullptr)) return state.SkipWithError("connect failed");
    }
    if (!RoundTrip(*stream, buffer)) return state.SkipWithError("exchange failed");
  }
}

void BM_Http11TlsKeepAlive(benchmark::State& state) { Http11Tls(state, false); }
void BM_Http11TlsNewConnection(benchmark::State& state) { Http11Tls(state, true); }

void BM_Http2Tls(benchmark::State& state) {
  Servers& s = GetServers();
  if (!s.tls) return state.SkipWithError("no server");
  const int streams = static_cast<int>(state.range(0));
  net::io_context io;
  std::optional<TlsStream> stream;
  if (!TlsConnect(s, io, stream, "h2")) return state.SkipWithError("connect failed");
  testing::Http2ClientSession client;
  std::array<char, 16 << 10> chunk;
  const testing::Http2Call call{.method = http::verb::post, .target = "/scheduler/filter", .body = Body()};
  boost::system::error_code ec;
  for (auto _ : state) {
    std::vector<int32_t> ids;
    for (int i = 0; i < streams; ++i) ids.push_back(client.Submit(call));
    net::write(*stream, net::buffer(client.TakeOutput()), ec);
    while (!ec && !client.AllClosed()) {
      const size_t n = stream->read_some(net::buffer(chunk), ec);
      if (!ec && !client.Receive(std::string_view(chunk.data(), n))) return state.SkipWithError("bad HTTP/2");
      const std::string out = client.TakeOutput();  // WINDOW_UPDATE, SETTINGS ACK
      if (!out.empty()) net::write(*stream, net::buffer(out), ec);
    }
    if (ec) return state.SkipWithError("exchange failed");
    if (client.answer(ids.back()).status != 200) return state.SkipWithError("not answered 200");
    client.ForgetClosed();
  }
  state.SetItemsProcessed(state.iterations() * streams);
  state.counters["per_request"] =
      benchmark::Counter(static_cast<double>(state.iterations() * streams),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_Http11Plain)->Name("Http11Plain/KeepAlive")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Http11PlainNewConnection)->Name("Http11Plain/NewConnection")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Http11TlsKeepAlive)->Name("Http11Tls/KeepAlive")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Http11TlsNewConnection)->Name("Http11Tls/NewConnection")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Http2Tls)->Name("Http2Tls")->ArgName("Streams")->Arg(1)->Arg(32)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
