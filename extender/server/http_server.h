// An asynchronous HTTP/1.1 server (Boost.Beast over Asio) for the extender's
// endpoints, shaped after Beast's example/advanced/server:
//
//   listener ──accept──> session (one per connection, on its own strand)
//                          idle ──readable──> reading ──> handling ──> writing
//                           ^                                            │
//                           └──────────────── keep-alive ────────────────┘
//
// * Request handling has no socket in it, so routing is tested without I/O.
//   Either a function HttpRequest -> HttpResponse (HttpHandler, Start()),
//   which runs on an io thread, or an AsyncHttpHandler (StartAsync()), which
//   is called on an io thread with the request and an HttpResponder and may
//   answer later from any thread: so work that waits (a bind's API call) or
//   runs long never holds an io thread, and /healthz stays fast. Answering
//   posts the write back onto the connection's strand. A handler that throws
//   gets a 500 answer, and the server keeps serving (nothing propagates out
//   of an Asio handler).
// * Every request is bounded: a fresh parser per request with an explicit body
//   limit and header limit, and a deadline for receiving the whole request.
//   Oversized or malformed requests get a JSON {"Error": ...} answer with
//   413 / 431 / 400, then that connection closes.
// * With TLS and a client CA, clients may present certificates; requests the
//   options name (needs_client_cert) from a client that presented none that
//   verifies are answered 403 by the server, before any handler.
// * The server as a whole is bounded too: at most max_connections open (one
//   more is closed as soon as it is accepted), and requests in flight (from
//   their header until their answer is written) hold at most
//   max_body_bytes_in_flight of body between them (a request whose body
//   would pass it gets 503 with Retry-After), so many clients each under the
//   body limit cannot add up to more memory than that allows.
// * A connection is "idle" while it waits for the first byte of its next
//   request (under idle_timeout) and "active" from then until its response is
//   written (reading and writing under read_timeout; waiting for a handler's
//   answer under the handler's own deadline). Drain() closes idle connections
//   at once but lets active ones finish, answers still to come included, so a
//   graceful stop (SIGTERM) never cuts a request that kube-scheduler has
//   started sending. Past drain_timeout the answers still owed are cut: the
//   connection closes unanswered, and an HttpResponder called later (even
//   after the server is gone) does nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include "absl/status/statusor.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {

/// A whole HTTP request, body as a string (extender requests are JSON).
using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
/// A whole HTTP response.
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
/// Answers one request. Must be thread-safe: the server calls it concurrently
/// from its io threads. The server fills in what the handler leaves out:
/// Content-Type (application/json), Content-Length, the HTTP version and the
/// Connection header (keep-alive is the server's decision).
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

namespace http_internal {
struct AnswerSlot;
}  // namespace http_internal

/// Answers one request of an AsyncHttpHandler: call it once, from any thread,
/// at any time. Copies share the request: the first call answers, later ones
/// are ignored. The server fills in the same headers as for an HttpHandler.
/// Safe in every state of the connection and the server: once the
/// connection was closed, or the server stopped past its drain timeout or was
/// destroyed, the answer is dropped. When the last copy is destroyed without
/// having been called, the request is answered 500 ("dropped unanswered"),
/// so a lost responder never leaves kube-scheduler waiting for its timeout.
class HttpResponder {
 public:
  explicit HttpResponder(std::shared_ptr<http_internal::AnswerSlot> slot);
  void operator()(HttpResponse response) const;

 private:
  struct Once;
  std::shared_ptr<Once> once_;
};

/// Takes one request and answers it through `respond`, now or later. Called
/// on an io thread, concurrently for different connections: it must return
/// quickly and hand anything slow to threads of its own.
using AsyncHttpHandler = std::function<void(HttpRequest request, HttpResponder respond)>;

/// A response with status `status`, Content-Type application/json and body
/// {"Error":"<reason>"} (reason JSON-escaped): the shape the server uses for
/// the errors it answers itself, offered so handlers answer alike (404, 405).
[[nodiscard]] HttpResponse JsonErrorResponse(boost::beast::http::status status, std::string_view reason);

/// Listening address, thread count, limits and timeouts of an HttpServer.
struct HttpServerOptions {
  /// Address to bind (IPv4 or IPv6 literal).
  std::string address = "127.0.0.1";
  /// Port to bind; 0 picks an ephemeral port (see HttpServer::port()).
  uint16_t port = 8888;
  /// Number of io threads running handlers (at least 1).
  int threads = 2;
  /// Largest accepted request body; larger ones get 413. Full-node-object
  /// filter requests from big clusters reach tens of MB. This default and
  /// max_body_bytes_in_flight's are derived from the chart's memory limit in
  /// extender/service/request_memory.h.
  size_t body_limit = size_t{128} << 20;
  /// Largest accepted request line plus header fields; larger ones get 431.
  uint32_t header_limit = 16 << 10;
  /// Most connections open at once; one more is closed when accepted.
  /// kube-scheduler keeps a few keep-alive connections per extender.
  size_t max_connections = 512;
  /// Most request-body bytes in flight at once, over all connections: each
  /// request reserves its Content-Length (a chunked one, body_limit) when its
  /// header is read and frees it once its answer is written, so what handling
  /// and answering it hold (a few times the body) is covered too. A request
  /// that does not fit gets 503 with Retry-After: 1. Never less than
  /// body_limit (the largest single request always fits on an idle server).
  size_t max_body_bytes_in_flight = size_t{384} << 20;
  /// Time to receive a whole request once its first byte arrived (also bounds
  /// writing the response). On expiry the connection is closed unanswered.
  std::chrono::milliseconds read_timeout{30000};
  /// How long a keep-alive connection may wait for its next request.
  std::chrono::milliseconds idle_timeout{120000};
  /// How long Drain() waits for requests in flight before force-closing.
  std::chrono::milliseconds drain_timeout{25000};
  /// Where the server counts what it refuses itself (may be null; must
  /// outlive the server): tessera_http_connections_refused_total (past
  /// max_connections) and tessera_http_rejections_total{reason} with reason
  /// body_budget (503), body_too_large (413), header_too_large (431),
  /// malformed (400), unauthenticated (403, needs_client_cert).
  MetricsRegistry* metrics = nullptr;
  /// Both set: serve HTTPS (TLS 1.2 and up) with this PEM certificate chain
  /// and PEM private key; both empty: plain HTTP. The handshake is under
  /// read_timeout. A client speaking plain HTTP to a TLS port is closed.
  std::string tls_cert_file;
  std::string tls_key_file;
  /// On an accept, at most this often, the two files' modification times are
  /// looked at; when they changed the certificate is read again, so a
  /// rotated Secret mounted as files is served without a restart (to new
  /// connections; open ones keep theirs). Files that do not load (a key not
  /// matching its certificate) leave the previous certificate in use.
  std::chrono::milliseconds tls_reload_interval{10000};
  /// With TLS: PEM CA certificates that clients' certificates are verified
  /// against (reloaded with the certificate, from the same look at the files).
  /// Set, the server asks every client for a certificate; one that does not
  /// verify fails the handshake, and a client that sends none is let in
  /// unauthenticated unless tls_require_client_cert. Empty: no client
  /// certificates are asked for.
  std::string tls_client_ca_file;
  /// With TLS: offer HTTP/2 by ALPN (a client that asks for "h2", as
  /// kube-scheduler's extender client does over HTTPS, gets it; others get
  /// HTTP/1.1). One HTTP/2 connection carries every request at once, so a
  /// burst opens no connections (and over TLS, no handshakes).
  bool http2 = true;
  /// HTTP/2: most requests open at once on one connection (SETTINGS
  /// MAX_CONCURRENT_STREAMS; one more is refused, and the client retries).
  uint32_t max_concurrent_streams = 256;
  /// With tls_client_ca_file: a client without a certificate is refused at
  /// the handshake (every request then comes from an authenticated client).
  bool tls_require_client_cert = false;
  /// With tls_client_ca_file: the requests that need an authenticated
  /// client. One for which this returns true, on a connection whose client
  /// presented no verified certificate, is answered by the server itself,
  /// 403 with {"Error": ...}, and never reaches the handler (counted as
  /// tessera_http_rejections_total{reason="unauthenticated"}). Called on an
  /// io thread; must be thread-safe and fast. Empty: none does.
  std::function<bool(const HttpRequest&)> needs_client_cert;
};

/// The HTTP server: a listener and its io threads. Not copyable or movable;
/// owned through the unique_ptr that Start() returns.
class HttpServer {
 public:
  /// Binds, listens and starts `options.threads` io threads serving `handler`.
  /// \return InvalidArgument for a bad address or thread count or TLS files
  ///         that do not load (unreadable, key not matching), client-auth
  ///         options without TLS and a client CA, Unavailable
  ///         when the address cannot be bound or listened on (e.g. in use).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, HttpHandler handler);
  /// The same, serving an AsyncHttpHandler.
  static absl::StatusOr<std::unique_ptr<HttpServer>> StartAsync(HttpServerOptions options, AsyncHttpHandler handler);

  /// Drains and waits (see Drain(), Wait()), then cuts the answers still owed
  /// (their connections close; their HttpResponders do nothing). Must not run
  /// on an io thread (i.e. not from inside the handler): it joins them.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The bound port (the ephemeral one when options.port was 0).
  [[nodiscard]] uint16_t port() const;

  /// Begins a graceful stop; returns without waiting for it (call Wait()).
  /// Stops accepting (when Drain() returns, unless called from an io thread,
  /// new connections are refused); closes idle keep-alive connections at
  /// once; lets requests in flight finish and answers them with
  /// "Connection: close" (an AsyncHttpHandler's answers still to come
  /// included); then the io threads exit. After drain_timeout the io threads
  /// are stopped regardless (a thread busy inside the handler exits when the
  /// handler returns) and the remaining connections are closed when the
  /// server is destroyed. Idempotent and thread-safe.
  void Drain();

  /// Blocks until every io thread has exited (after Drain(), or after a
  /// forced stop). Safe to call more than once and from several threads.
  void Wait();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
