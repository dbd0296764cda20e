#include "extender/server/http_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "extender/server/h2_session.h"
#include "extender/server/http_parse.h"
#include "extender/server/server_core.h"
#include "scheduler/common/json_text.h"
#include "scheduler/common/thread_name.h"

namespace tessera {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

// Longest we keep reading (and discarding) after answering 413/431/400, so
// the client reads our answer instead of a reset (see Session::LingerClose).
constexpr std::chrono::milliseconds kMaxLinger{2000};

// Accept failures such as EMFILE repeat at once; back off instead of spinning.
constexpr std::chrono::milliseconds kAcceptRetry{50};

// When the certificate, key and client-CA files last changed; nullopt when
// one cannot be read.
using http_internal::TlsFilesStamp;
std::optional<TlsFilesStamp> StampTlsFiles(const HttpServerOptions& o) {
  TlsFilesStamp stamp{};
  const std::array<const std::string*, 3> files = {&o.tls_cert_file, &o.tls_key_file, &o.tls_client_ca_file};
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i]->empty()) continue;
    std::error_code ec;
    stamp[i] = std::filesystem::last_write_time(*files[i], ec);
    if (ec) return std::nullopt;
  }
  return stamp;
}

// Client certificates verified against o.tls_client_ca_file, asked for from
// every client (required when o.tls_require_client_cert).
absl::Status LoadClientCa(net::ssl::context& ctx, const HttpServerOptions& o) {
  error_code ec;
  if (ctx.load_verify_file(o.tls_client_ca_file, ec); ec) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read the TLS client CA file %s: %s", o.tls_client_ca_file, ec.message()));
  }
  // The CA names the server sends with its request: a client holding several
  // certificates (Go's crypto/tls) picks the one one of these issued.
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.tls_client_ca_file.c_str());
  if (names == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the TLS client CA file %s holds no certificate", o.tls_client_ca_file));
  }
  SSL_CTX_set_client_CA_list(ctx.native_handle(), names);
  ctx.set_verify_mode(o.tls_require_client_cert ? net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert
                                                : net::ssl::verify_peer,
                      ec);
  if (ec) return absl::InternalError(absl::StrFormat("cannot set the TLS verify mode: %s", ec.message()));
  // Resuming a session needs a context id once peers are verified (else
  // OpenSSL fails the resumption handshake).
  static constexpr unsigned char kSessionContext[] = "tessera";
  SSL_CTX_set_session_id_context(ctx.native_handle(), kSessionContext, sizeof kSessionContext - 1);
  return absl::OkStatus();
}

// A server context with the certificate chain and key of `o`, TLS 1.2 and up.
absl::StatusOr<std::shared_ptr<net::ssl::context>> LoadTlsContext(const HttpServerOptions& o) {
  try {
    auto ctx = std::make_shared<net::ssl::context>(net::ssl::context::tls_server);
    ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                     net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 |
                     net::ssl::context::single_dh_use);
    SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
    error_code ec;
    if (ctx->use_certificate_chain_file(o.tls_cert_file, ec); ec) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cannot read the TLS certificate chain %s: %s", o.tls_cert_file, ec.message()));
    }
    if (ctx->use_private_key_file(o.tls_key_file, net::ssl::context::pem, ec); ec) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cannot read the TLS private key %s: %s", o.tls_key_file, ec.message()));
    }
    if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
      return absl::InvalidArgumentError(absl::StrFormat("the TLS private key %s does not match the certificate %s",
                                                        o.tls_key_file, o.tls_cert_file));
    }
    if (!o.tls_client_ca_file.empty()) {
      if (absl::Status st = LoadClientCa(*ctx, o); !st.ok()) return st;
    }
    if (o.http2) http_internal::OfferHttp2(*ctx);
    return ctx;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrFormat("cannot create a TLS context: %s", e.what()));
  }
}

// After a successful handshake: the client sent a certificate and it
// verified (with verify_peer, one that does not verify fails the handshake;
// this also holds where a verify callback let it through).
bool PeerVerified(SSL* ssl) {
  X509* peer = SSL_get_peer_certificate(ssl);
  if (peer == nullptr) return false;
  X509_free(peer);
  return SSL_get_verify_result(ssl) == X509_V_OK;
}

// The TLS options make sense together (files are looked at later).
absl::Status CheckTlsOptions(const HttpServerOptions& o) {
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate file and a key file");
  }
  if (o.tls_cert_file.empty() && !o.tls_client_ca_file.empty()) {
    return absl::InvalidArgumentError("a TLS client CA needs TLS: a certificate file and a key file");
  }
  if (o.tls_client_ca_file.empty() && (o.tls_require_client_cert || o.needs_client_cert)) {
    return absl::InvalidArgumentError("authenticating clients needs a TLS client CA file");
  }
  return absl::OkStatus();
}

}  // namespace

HttpResponse JsonErrorResponse(http::status status, std::string_view reason) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = JsonErrorBody(reason);
  res.prepare_payload();
  return res;
}

namespace http_internal {

// One connection. Every member is touched only on the socket's strand (the
// executor of stream_ and timer_), so no locking. The session owns itself via
// the shared_ptrs captured in its pending handlers; when the last completes
// without starting another, the session is destroyed and the socket closed.
template <class Stream>
class StreamSession final : public Session {
 public:
  // Plain: the socket itself. TLS: the socket under a stream of `tls`, which
  // the session keeps alive (a rotated certificate leaves it in use here).
  StreamSession(tcp::socket socket, ServerCore& server, std::shared_ptr<net::ssl::context> tls)
    requires std::is_same_v<Stream, tcp::socket>
      : stream_(std::move(socket)), strand_(stream_.get_executor()), timer_(strand_), server_(server) {
    (void)tls;
  }
  StreamSession(tcp::socket socket, ServerCore& server, std::shared_ptr<net::ssl::context> tls)
    requires(!std::is_same_v<Stream, tcp::socket>)
      : tls_(std::move(tls)), stream_(std::move(socket), *tls_), strand_(stream_.get_executor()), timer_(strand_),
        server_(server) {}

  ~StreamSession() override {
    ReleaseBody();
    server_.Unregister(this);
  }

  // Registers with the server and starts waiting for the first request.
  // Called on the acceptor's strand.
  void Start() override {
    if (!server_.Register(this)) {
      error_code ec;
      Socket().close(ec);
      return;
    }
    error_code ec;
    Socket().set_option(tcp::no_delay(true), ec);  // answers are one write; do not wait for an ACK
    net::post(strand_, [self = Self()] { self->Begin(); });
  }

  // Thread-safe: hops onto the strand.
  void Drain() override {
    net::post(strand_, [self = Self()] { self->OnDrain(); });
  }

  // The strand every member is touched on (AnswerSlot::Deliver posts to it).
  [[nodiscard]] const net::any_io_executor& strand() const override { return strand_; }

  // On the strand: the handler's answer to the request in kHandling.
  void OnAnswer(uint32_t /*stream*/, HttpResponse res) override {
    if (state_ != State::kHandling) return;
    server_.ForgetSlot(slot_);
    slot_.reset();
    try {
      if (res.find(http::field::content_type) == res.end()) {
        res.set(http::field::content_type, "application/json");
      }
      // Decided now: a Drain() that began meanwhile makes this the
      // connection's last response.
      res.version(request_version_);
      res.keep_alive(request_keep_alive_ && !Draining());
      res.prepare_payload();  // Content-Length; throws for e.g. a 204 with a body
    } catch (const std::exception& e) {
      res = InternalError(e.what());
    } catch (...) {
      res = InternalError("unknown exception");
    }
    // The request is handled; its answer stays in flight, under the body's
    // reservation until written (Write releases it): the budget bounds what
    // requests hold until their answers are out.
    Write(std::move(res), /*linger=*/false);
  }

 private:
  enum class State { kHandshaking, kIdle, kReading, kHandling, kWriting, kLingering, kClosed };

  [[nodiscard]] std::shared_ptr<StreamSession> Self() {
    return std::static_pointer_cast<StreamSession>(shared_from_this());
  }
  [[nodiscard]] tcp::socket& Socket() { return beast::get_lowest_layer(stream_); }

  // The connection's first step: TLS first shakes hands, under read_timeout
  // (a client that never finishes it is closed then, like a slow request).
  void Begin() {
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      server_.CountConnection("http/1.1");
      AwaitRequest();
    } else {
      if (Draining()) return Close();
      state_ = State::kHandshaking;
      ArmTimer(server_.options.read_timeout);
      stream_.async_handshake(net::ssl::stream_base::server, [self = Self()](error_code ec) {
        if (self->state_ != State::kHandshaking) return;
        // Plain HTTP, an old protocol version, no shared cipher: nothing we
        // could answer in a language the client reads, so just close.
        if (ec) return self->Close();
        self->client_verified_ = PeerVerified(self->stream_.native_handle());
        if (NegotiatedHttp2(self->stream_.native_handle())) return self->HandOverToHttp2();
        self->server_.CountConnection("http/1.1");
        // The first request may have arrived with the client's Finished and
        // sit decrypted-to-be in the TLS engine, where waiting for the
        // socket's readability would not see it: read it at once.
        self->ReadRequest();
      });
    }
  }

  // The handshake chose HTTP/2: the TLS stream moves to an H2Session, which
  // registers itself before this session, left without a socket, goes.
  void HandOverToHttp2() {
    if constexpr (!std::is_same_v<Stream, tcp::socket>) {
      CancelTimer();
      state_ = State::kClosed;
      StartHttp2Session(std::move(stream_), tls_, server_, client_verified_);
    }
  }

  [[nodiscard]] bool Draining() const { return drain_ || server_.draining.load(); }

  // Idle: wait for readability, not for a request, so that Drain() can tell a
  // connection with nothing in flight from one whose request is arriving.
  void AwaitRequest() {
    if (Draining()) return Close();
    state_ = State::kIdle;
    if (buffer_.size() > 0) return ReadRequest();  // a pipelined request is already here
    ArmTimer(server_.options.idle_timeout);
    Socket().async_wait(tcp::socket::wait_read, [self = Self()](error_code ec) {
      if (self->state_ != State::kIdle) return;
      if (ec) return self->Close();
      self->ReadRequest();
    });
  }

  void ReadRequest() {
    state_ = State::kReading;
    ArmTimer(server_.options.read_timeout);  // one deadline for header and body
    // Beast reads what the buffer has room for, at least 512 bytes, and its
    // parser takes bytes out as it goes: from an empty buffer a 3 KiB filter
    // request took six reads, each with a reactor round. One allocation a
    // connection makes it one or two.
    if (buffer_.capacity() < kReadChunk) buffer_.reserve(kReadChunk);
    parser_.emplace();
    ConfigureRequestParser(*parser_, server_.options);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = Self()](error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(error_code ec) {
    if (state_ != State::kReading) return;
    if (ec) return FailRead(ec);
    // The body's share of the server-wide budget, taken before any of it is
    // read. The parser has already refused a Content-Length over body_limit.
    const uint64_t body = parser_->content_length().value_or(parser_->chunked() ? server_.options.body_limit : 0);
    if (body > 0) {
      if (!server_.ReserveBody(body)) {
        HttpResponse busy = JsonErrorResponse(
            http::status::service_unavailable,
            absl::StrFormat("server busy: request bodies in flight would exceed %d bytes; retry",
                            std::max(server_.options.max_body_bytes_in_flight, server_.options.body_limit)));
        busy.set(http::field::retry_after, "1");
        return Reject(std::move(busy));
      }
      reserved_body_ = body;
    }
    // curl and other clients send "Expect: 100-continue" with large bodies
    // and pause (curl: 1 s) until told to go on.
    const auto& header = parser_->get();
    if (!parser_->is_done() && header.version() >= 11 &&
        beast::iequals(header[http::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = Self()](error_code ec, size_t) {
                         if (self->state_ != State::kReading) return;
                         if (ec) return self->Close();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return OnRequest({});
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](error_code ec, size_t) { self->OnRequest(ec); });
  }

  // Maps a read error to an answer (limits, malformed HTTP) or a silent close
  // (peer gone, timeout, mid-message EOF: nobody to answer).
  void FailRead(error_code ec) {
    std::optional<HttpResponse> rejection = RejectionFor(ec, server_.options);
    if (!rejection) return Close();
    Reject(*std::move(rejection));
  }

  void OnRequest(error_code ec) {
    if (state_ != State::kReading) return;
    if (ec) return FailRead(ec);
    CancelTimer();  // the handler's own deadline bounds the wait for its answer
    state_ = State::kHandling;
    HttpRequest req = parser_->release();
    parser_.reset();
    request_version_ = req.version();
    request_keep_alive_ = req.keep_alive();
    slot_ = server_.OpenSlot(shared_from_this());
    server_.Handle(std::move(req), HttpResponder(slot_), client_verified_);
  }

  HttpResponse InternalError(std::string_view what) const {
    HttpResponse res =
        JsonErrorResponse(http::status::internal_server_error, absl::StrFormat("internal error: %s", what));
    res.version(request_version_);
    res.keep_alive(request_keep_alive_ && !Draining());
    return res;
  }

  // Answers an error the server detected itself, then closes the connection:
  // the rest of the stream cannot be trusted to be at a message boundary.
  void Reject(HttpResponse res) {
    server_.CountRejection(res.result());
    res.keep_alive(false);
    Write(std::move(res), /*linger=*/true);
  }

  void Write(HttpResponse res, bool linger) {
    state_ = State::kWriting;
    response_ = std::move(res);
    ArmTimer(server_.options.read_timeout);
    http::async_write(stream_, response_, [self = Self(), linger](error_code ec, size_t) {
      if (self->state_ != State::kWriting) return;
      self->CancelTimer();
      if (ec) return self->Close();
      const bool keep_alive = self->response_.keep_alive();
      self->response_ = {};  // free a possibly large body while idle
      self->ReleaseBody();   // the request is done: its share of the budget is free again
      if (linger) return self->LingerClose();
      if (!keep_alive) return self->Close();
      self->AwaitRequest();
    });
  }

  // After an early answer (413 while the client is still sending its body),
  // closing at once would make the kernel answer the unread bytes with a
  // reset, which can destroy our response before the client reads it. So:
  // half-close, discard what still arrives for a bounded time, then close.
  void LingerClose() {
    state_ = State::kLingering;
    error_code ec;
    Socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return Close();
    ArmTimer(std::min<std::chrono::milliseconds>(server_.options.read_timeout, kMaxLinger));
    Discard();
  }

  void Discard() {
    stream_.async_read_some(net::buffer(discard_), [self = Self()](error_code ec, size_t) {
      if (self->state_ != State::kLingering) return;
      if (ec) return self->Close();  // EOF: the client has read our answer and gone
      self->Discard();
    });
  }

  void OnDrain() {
    drain_ = true;
    if (state_ != State::kIdle) return;  // active: finishes, then closes (Draining())
    // Bytes already in the kernel mean a request has started to arrive and
    // the readability wait is about to complete: serve it rather than cut it.
    error_code ec;
    if (Socket().available(ec) > 0 && !ec) return;
    Close();
  }

  // The timer generation makes a stale expiry (one that completed just as we
  // re-armed or cancelled) a no-op.
  void ArmTimer(std::chrono::milliseconds timeout) {
    const uint64_t generation = ++timer_generation_;
    timer_.expires_after(timeout);
    timer_.async_wait([self = Self(), generation](error_code ec) {
      if (ec || generation != self->timer_generation_) return;
      self->Close();  // idle or read timeout: nothing to answer, just close
    });
  }

  void CancelTimer() {
    ++timer_generation_;
    timer_.cancel();
  }

  void ReleaseBody() {
    if (reserved_body_ > 0) server_.ReleaseBody(reserved_body_);
    reserved_body_ = 0;
  }

  // Closing the socket cancels whatever operation is pending; its handler sees
  // kClosed and returns, releasing the last reference to the session.
  void Close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    ReleaseBody();
    CancelTimer();
    error_code ec;
    Socket().shutdown(tcp::socket::shutdown_both, ec);
    Socket().close(ec);
  }

  std::shared_ptr<net::ssl::context> tls_;  // TLS only: outlives stream_
  Stream stream_;
  const net::any_io_executor strand_;  // stream_'s
  net::steady_timer timer_;
  ServerCore& server_;
  // While kHandling: where the answer will come through, and what of the
  // request the answer's headers need.
  std::shared_ptr<AnswerSlot> slot_;
  unsigned request_version_ = 11;
  bool request_keep_alive_ = false;
  // A filter request of names is 2-5 KiB; within the ~40 KiB a connection is
  // allowed in extender/service/request_memory.h.
  static constexpr size_t kReadChunk = 8 << 10;
  beast::flat_buffer buffer_;
  std::optional<HttpRequestParser> parser_;
  HttpResponse response_;
  State state_ = State::kIdle;
  bool drain_ = false;
  uint64_t timer_generation_ = 0;
  uint64_t reserved_body_ = 0;  // this request's share of the body budget
  // TLS: the client presented a certificate the client CA verified.
  bool client_verified_ = false;
  std::array<char, 16 << 10> discard_;
};

void AnswerSlot::Deliver(HttpResponse response) {
  // Posted under the mutex, so CutAnswersOwed (which takes it) cannot run
  // between our look at `session` and the post: once the cut is over, nothing
  // more is posted, and the io_context may go.
  std::lock_guard<std::mutex> lock(mu);
  if (session == nullptr) return;
  std::shared_ptr<Session> s = std::move(session);
  const net::any_io_executor strand = s->strand();
  net::post(strand, [s = std::move(s), stream = stream, response = std::move(response)]() mutable {
    s->OnAnswer(stream, std::move(response));
  });
}

void ServerCore::Handle(HttpRequest request, const HttpResponder& respond, bool client_verified) {
  try {
    if (!client_verified && options.needs_client_cert && options.needs_client_cert(request)) {
      CountRejection(http::status::forbidden);
      return respond(JsonErrorResponse(
          http::status::forbidden,
          "this request needs a client certificate that Tessera's client CA verifies (--tls-client-auth); "
          "kube-scheduler presents one through its extender tlsConfig certFile and keyFile"));
    }
    handler(std::move(request), respond);
  } catch (const std::exception& e) {
    respond(JsonErrorResponse(http::status::internal_server_error, absl::StrFormat("internal error: %s", e.what())));
  } catch (...) {
    respond(JsonErrorResponse(http::status::internal_server_error, "internal error: unknown exception"));
  }
}

void ServerCore::DoAccept() {
  // Each connection gets its own strand: its handlers never run concurrently.
  acceptor.async_accept(net::make_strand(ioc),
                        [this](error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void ServerCore::OnAccept(error_code ec, tcp::socket socket) {
  if (!acceptor.is_open()) return;  // closed by Drain()
  if (ec) {
    retry_timer.expires_after(kAcceptRetry);
    retry_timer.async_wait([this](error_code ec) {
      if (!ec && acceptor.is_open()) DoAccept();
    });
    return;
  }
  bool full = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    full = sessions.size() >= options.max_connections;
  }
  if (full) {
    // Closed at once rather than left in the backlog: the client sees the
    // refusal now, not at its own timeout.
    CountRefusedConnection();  // first, so that whoever sees the close sees the count
    error_code ignored;
    socket.close(ignored);
  } else if (tls != nullptr) {
    MaybeReloadTls();
    std::make_shared<StreamSession<TlsStream>>(std::move(socket), *this, tls)->Start();
  } else {
    std::make_shared<StreamSession<tcp::socket>>(std::move(socket), *this, nullptr)->Start();
  }
  DoAccept();
}

void ServerCore::MaybeReloadTls() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_tls_check) return;
  next_tls_check = now + options.tls_reload_interval;
  const std::optional<TlsFilesStamp> stamp = StampTlsFiles(options);
  if (!stamp || stamp == tls_stamp) return;
  absl::StatusOr<std::shared_ptr<net::ssl::context>> fresh = LoadTlsContext(options);
  if (!fresh.ok()) {
    // E.g. the certificate written and the key not yet: tried again next time.
    std::fprintf(stderr, "tessera http: TLS files changed but not taken up, the previous certificate stays: %s\n",
                 std::string(fresh.status().message()).c_str());
    return;
  }
  tls = *std::move(fresh);
  tls_stamp = stamp;
  std::fprintf(stderr, "tessera http: TLS certificate reloaded from %s\n", options.tls_cert_file.c_str());
}

void ServerCore::CloseAcceptor() {
  error_code ec;
  acceptor.close(ec);
  retry_timer.cancel();
  std::lock_guard<std::mutex> lock(mu);
  if (sessions.empty()) return;  // nothing in flight: the io threads run out of work and exit
  drain_timer.expires_after(options.drain_timeout);
  drain_timer.async_wait([this](error_code ec) {
    if (ec) return;  // cancelled by the last session's exit
    std::fprintf(stderr, "tessera http: drain timeout after %lld ms, stopping with requests in flight\n",
                 static_cast<long long>(options.drain_timeout.count()));
    ioc.stop();
  });
}

void ServerCore::Unregister(Session* s) {
  std::lock_guard<std::mutex> lock(mu);
  sessions.erase(s);
  // The last session gone while draining: drop the drain deadline, the only
  // work left, so the io threads can return. (Not while the io_context itself
  // is being destroyed: it destroys the handlers that own the sessions.)
  if (draining_locked && sessions.empty() && !destroying) {
    net::post(strand, [this] { drain_timer.cancel(); });
  }
}

void ServerCore::Drain() {
  std::vector<std::shared_ptr<Session>> live;
  std::future<void> acceptor_closed;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (draining_locked) return;
    draining_locked = true;
    draining.store(true);
    live.reserve(sessions.size());
    for (Session* s : sessions) {
      // Empty when that session's destructor is waiting for `mu`.
      if (auto p = s->weak_from_this().lock()) live.push_back(std::move(p));
    }
    // Posted under `mu`, so it runs before any drain-timer cancel posted by
    // Unregister (which needs `mu` after us).
    auto done = std::make_shared<std::promise<void>>();
    acceptor_closed = done->get_future();
    net::post(strand, [this, done] {
      CloseAcceptor();
      done->set_value();
    });
  }
  for (auto& s : live) s->Drain();
  live.clear();
  // Wait so that a connect after Drain() returns is refused. Not on an io
  // thread (that could be the only one, needed to run the close); bounded in
  // case the io threads are all busy or already stopped (then the promise is
  // destroyed unset and the future is ready at once).
  // (No io threads at all when Start() failed half-way: nothing to wait for.)
  if (!threads.empty() && !ioc.get_executor().running_in_this_thread()) {
    acceptor_closed.wait_for(options.drain_timeout);
  }
}

void ServerCore::Wait() {
  std::lock_guard<std::mutex> lock(wait_mu);
  for (auto& t : threads) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  }
}

void ServerCore::RunIoThread() {
  NameThisThread("http-io");
  // Handlers catch what they can; this is the last line so that a stray
  // exception costs one handler, not the io thread.
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tessera http: exception escaped an io handler: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "tessera http: unknown exception escaped an io handler\n");
    }
  }
}

}  // namespace http_internal

struct HttpResponder::Once {
  explicit Once(std::shared_ptr<http_internal::AnswerSlot> s) : slot(std::move(s)) {}
  ~Once() {
    if (answered.exchange(true)) return;
    try {
      slot->Deliver(JsonErrorResponse(http::status::internal_server_error,
                                      "internal error: the request was dropped unanswered"));
    } catch (...) {
      // Out of memory in a destructor: the connection then closes with the server.
    }
  }
  Once(const Once&) = delete;
  Once& operator=(const Once&) = delete;

  std::shared_ptr<http_internal::AnswerSlot> slot;
  std::atomic<bool> answered{false};
};

HttpResponder::HttpResponder(std::shared_ptr<http_internal::AnswerSlot> slot)
    : once_(std::make_shared<Once>(std::move(slot))) {}

void HttpResponder::operator()(HttpResponse response) const {
  if (once_->answered.exchange(true)) return;
  once_->slot->Deliver(std::move(response));
}

struct HttpServer::Impl : http_internal::ServerCore {
  using ServerCore::ServerCore;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;  // ~ServerCore drains and waits

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options, HttpHandler handler) {
  if (!handler) return absl::InvalidArgumentError("handler is empty");
  // Answered at once, on the io thread; an exception reaches the session's catch.
  return StartAsync(std::move(options), [handler = std::move(handler)](HttpRequest request, HttpResponder respond) {
    respond(handler(request));
  });
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::StartAsync(HttpServerOptions options,
                                                                   AsyncHttpHandler handler) {
  if (options.threads < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("threads must be >= 1, got %d", options.threads));
  }
  if (options.max_connections < 1) return absl::InvalidArgumentError("max_connections must be >= 1, got 0");
  if (!handler) return absl::InvalidArgumentError("handler is empty");
  error_code ec;
  const net::ip::address address = net::ip::make_address(options.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrFormat("invalid listen address \"%s\": %s", options.address, ec.message()));
  }
  const tcp::endpoint endpoint(address, options.port);
  const std::string where = absl::StrFormat("%s:%d", options.address, options.port);

  std::shared_ptr<net::ssl::context> tls;
  std::optional<TlsFilesStamp> tls_stamp;
  if (absl::Status st = CheckTlsOptions(options); !st.ok()) return st;
  if (!options.tls_cert_file.empty()) {
    tls_stamp = StampTlsFiles(options);
    absl::StatusOr<std::shared_ptr<net::ssl::context>> loaded = LoadTlsContext(options);
    if (!loaded.ok()) return loaded.status();
    tls = *std::move(loaded);
  }

  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  impl->tls = std::move(tls);
  impl->tls_stamp = tls_stamp;
  impl->next_tls_check = std::chrono::steady_clock::now() + impl->options.tls_reload_interval;
  tcp::acceptor& acceptor = impl->acceptor;
  if (acceptor.open(endpoint.protocol(), ec); ec) {
    return absl::UnavailableError(absl::StrFormat("cannot open a socket for %s: %s", where, ec.message()));
  }
  // Lets a restarted extender bind while old connections sit in TIME_WAIT.
  if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec) {
    return absl::UnavailableError(absl::StrFormat("cannot set SO_REUSEADDR on %s: %s", where, ec.message()));
  }
  if (acceptor.bind(endpoint, ec); ec) {
    return absl::UnavailableError(absl::StrFormat("cannot bind %s: %s", where, ec.message()));
  }
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) {
    return absl::UnavailableError(absl::StrFormat("cannot listen on %s: %s", where, ec.message()));
  }
  const tcp::endpoint local = acceptor.local_endpoint(ec);
  if (ec) return absl::UnavailableError(absl::StrFormat("cannot read the bound port of %s: %s", where, ec.message()));
  impl->port = local.port();

  // No io thread runs yet, so starting the first accept off the strand is safe.
  impl->DoAccept();
  impl->threads.reserve(static_cast<size_t>(impl->options.threads));
  for (int i = 0; i < impl->options.threads; ++i) {
    impl->threads.emplace_back([core = impl.get()] { core->RunIoThread(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::Drain() { impl_->Drain(); }

void HttpServer::Wait() { impl_->Wait(); }

}  // namespace tessera
