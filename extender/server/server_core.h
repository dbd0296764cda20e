// The parts of HttpServer that its connection kinds share (internal to
// extender/server): the server core (listener, registry of connections and of
// answers owed, request-body budget, refusal counters), the interface a
// connection offers it, and the slot an AsyncHttpHandler's answer travels
// through. HTTP/1.1 connections (plain or TLS) live in http_server.cc, HTTP/2
// ones (TLS, negotiated by ALPN) in h2_session.cc.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http/status.hpp>

#include "extender/server/http_server.h"
#include "scheduler/metrics/metrics.h"

namespace tessera::http_internal {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using TlsStream = net::ssl::stream<tcp::socket>;
using boost::system::error_code;
namespace http = boost::beast::http;

// When the certificate, key and client-CA files last changed (following
// symlinks: a mounted Secret swaps a symlink).
using TlsFilesStamp = std::array<std::filesystem::file_time_type, 3>;

// One connection: HTTP/1.1 over a plain socket or TLS (StreamSession, in
// http_server.cc) or HTTP/2 over TLS (H2Session): what the server and the
// answer slots see of it.
class Session : public std::enable_shared_from_this<Session> {
 public:
  virtual ~Session() = default;
  // Registers with the server and starts reading. On the acceptor's strand.
  virtual void Start() = 0;
  // Thread-safe: hops onto the strand.
  virtual void Drain() = 0;
  // The strand every member is touched on (AnswerSlot::Deliver posts to it).
  [[nodiscard]] virtual const net::any_io_executor& strand() const = 0;
  // On the strand: the handler's answer to the request of `stream` (HTTP/2's
  // stream id; 0 for HTTP/1.1, which has one request in hand at a time).
  virtual void OnAnswer(uint32_t stream, HttpResponse res) = 0;
};

// Where an AsyncHttpHandler's answer goes: the session that waits for it,
// until the answer is delivered or the server cuts it (~ServerCore). Shared by
// the HttpResponder (any thread, any lifetime) and the server's registry; the
// mutex makes "deliver" and "cut" exclusive, so nothing is posted to an
// io_context that is being destroyed.
struct AnswerSlot {
  // Posts `response` to the waiting session's strand; nothing once cut.
  void Deliver(HttpResponse response);
  // Takes the waiting session away (null if already delivered).
  std::shared_ptr<Session> Cut() {
    std::lock_guard<std::mutex> lock(mu);
    return std::move(session);
  }

  std::mutex mu;
  std::shared_ptr<Session> session;  // guarded by mu
  uint32_t stream = 0;               // the request's HTTP/2 stream; 0 for HTTP/1.1
};

// Everything the listener and the sessions share. HttpServer::Impl is this
// (HttpServer::Impl is private, so sessions name the base instead).
//
// Member order matters for destruction: the session registry and its mutex
// are declared before the io_context, because destroying the io_context
// destroys handlers that still own sessions, and ~Session unregisters itself.
struct ServerCore {
  ServerCore(HttpServerOptions o, AsyncHttpHandler h)
      : options(std::move(o)),
        handler(std::move(h)),
        ioc(std::max(options.threads, 1)),
        strand(net::make_strand(ioc)),
        acceptor(strand),
        retry_timer(strand),
        drain_timer(strand) {
    ExportRefusalCounters();
  }

  ~ServerCore() {
    Drain();
    Wait();
    CutAnswersOwed();
    std::lock_guard<std::mutex> lock(mu);
    destroying = true;
  }

  // Registers the answer `session` now waits for. Thread-safe.
  std::shared_ptr<AnswerSlot> OpenSlot(std::shared_ptr<Session> session, uint32_t stream = 0) {
    auto slot = std::make_shared<AnswerSlot>();
    slot->session = std::move(session);
    slot->stream = stream;
    std::lock_guard<std::mutex> lock(mu);
    slots.insert(slot);
    return slot;
  }
  void ForgetSlot(const std::shared_ptr<AnswerSlot>& slot) {
    std::lock_guard<std::mutex> lock(mu);
    slots.erase(slot);
  }
  // Once the io threads are gone: the sessions still waiting for an answer
  // close unanswered, and their responders find nobody to answer.
  void CutAnswersOwed() {
    std::vector<std::shared_ptr<AnswerSlot>> owed;
    {
      std::lock_guard<std::mutex> lock(mu);
      owed.assign(slots.begin(), slots.end());
      slots.clear();
    }
    for (const auto& slot : owed) slot->Cut();  // the session, if last held here, closes now
  }

  // Hands a whole request to the handler (on an io thread), or answers it
  // 403 itself when it needs a client certificate the connection's client
  // did not present (`client_verified`); a handler that throws answers 500.
  void Handle(HttpRequest request, const HttpResponder& respond, bool client_verified);

  void DoAccept();
  void OnAccept(error_code ec, tcp::socket socket);
  // On `strand`: takes up a rotated certificate (at most once per
  // tls_reload_interval); keeps the one in use when the new files are bad.
  void MaybeReloadTls();
  // On `strand`: stops accepting; arms the drain deadline if sessions remain.
  void CloseAcceptor();
  void Drain();
  void Wait();
  void RunIoThread();

  // Adds `s` to the sessions a drain waits for; false once the server
  // drains (the caller closes its socket instead). Thread-safe.
  bool Register(Session* s) {
    std::lock_guard<std::mutex> lock(mu);
    if (draining_locked) return false;
    sessions.insert(s);
    return true;
  }
  // Called by ~Session.
  void Unregister(Session* s);

  // The request-body budget (HttpServerOptions::max_body_bytes_in_flight):
  // takes `bytes` if they fit. Thread-safe.
  bool ReserveBody(uint64_t bytes) {
    const uint64_t budget = std::max<uint64_t>(options.max_body_bytes_in_flight, options.body_limit);
    uint64_t held = body_bytes_in_flight.load();
    do {
      if (bytes > budget - std::min(held, budget)) return false;
    } while (!body_bytes_in_flight.compare_exchange_weak(held, held + bytes));
    return true;
  }
  void ReleaseBody(uint64_t bytes) { body_bytes_in_flight.fetch_sub(bytes); }

  // What the server refused itself, in options.metrics (when given).
  Counter& RefusedConnections() {
    return options.metrics->Counter("tessera_http_connections_refused_total",
                                    "Connections closed when accepted, past --max-connections.");
  }
  Counter& Rejections(std::string_view reason) {
    return options.metrics->Counter(
        "tessera_http_rejections_total",
        "Requests the HTTP server answered itself, before any handler: body_budget (503, "
        "--max-body-bytes-in-flight), body_too_large (413), header_too_large (431), malformed (400), "
        "unauthenticated (403, no verified client certificate: --tls-client-auth).",
        {{"reason", std::string(reason)}});
  }
  Counter& Connections(std::string_view protocol) {
    return options.metrics->Counter("tessera_http_connections_total",
                                    "Connections served, by protocol: http/1.1 (plain or TLS) or h2 (HTTP/2 over "
                                    "TLS, chosen by ALPN; one connection carries many requests at once).",
                                    {{"protocol", std::string(protocol)}});
  }
  void CountConnection(std::string_view protocol) {
    if (options.metrics != nullptr) Connections(protocol).Inc();
  }
  // Every series at 0 from the start: rate() and increase() count the first
  // refusal only when the series existed before it.
  void ExportRefusalCounters() {
    if (options.metrics == nullptr) return;
    RefusedConnections();
    Connections("http/1.1");
    Connections("h2");
    for (std::string_view reason : {"body_budget", "body_too_large", "header_too_large", "malformed", "unauthenticated"}) {
      Rejections(reason);
    }
  }
  void CountRefusedConnection() {
    if (options.metrics != nullptr) RefusedConnections().Inc();
  }
  void CountRejection(http::status status) {
    if (options.metrics == nullptr) return;
    std::string_view reason = "malformed";
    if (status == http::status::service_unavailable) reason = "body_budget";
    if (status == http::status::payload_too_large) reason = "body_too_large";
    if (status == http::status::request_header_fields_too_large) reason = "header_too_large";
    if (status == http::status::forbidden) reason = "unauthenticated";
    Rejections(reason).Inc();
  }

  const HttpServerOptions options;
  const AsyncHttpHandler handler;

  std::mutex mu;
  std::unordered_set<Session*> sessions;  // guarded by mu
  // Answers owed by the AsyncHttpHandler, until delivered (guarded by mu).
  std::unordered_set<std::shared_ptr<AnswerSlot>> slots;
  bool draining_locked = false;           // guarded by mu
  bool destroying = false;                // guarded by mu
  // Mirrors draining_locked for sessions, which read it without the mutex.
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> body_bytes_in_flight{0};

  net::io_context ioc;
  // The acceptor and both timers live on one strand.
  net::strand<net::io_context::executor_type> strand;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;
  net::steady_timer drain_timer;
  uint16_t port = 0;
  // TLS only, touched on `strand`: the context new connections get (each
  // session holds the one it started with), and what its files looked like.
  std::shared_ptr<net::ssl::context> tls;
  std::optional<TlsFilesStamp> tls_stamp;
  std::chrono::steady_clock::time_point next_tls_check;

  std::mutex wait_mu;  // serialises Wait()
  std::vector<std::thread> threads;
};

}  // namespace tessera::http_internal
