#include "extender/server/h2_session.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <unordered_map>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "absl/strings/str_format.h"
#include "extender/server/h2_connection.h"

namespace tessera::http_internal {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ALPN's wire form: each name after its length.
constexpr unsigned char kServerProtocols[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int SelectProtocol(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                   unsigned int inlen, void* /*arg*/) {
  unsigned char* selected = nullptr;
  // Our order wins: h2 when the client offers it, else http/1.1.
  if (SSL_select_next_proto(&selected, outlen, kServerProtocols, sizeof kServerProtocols, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no common protocol: go on without ALPN (HTTP/1.1)
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// How often a connection looks at its deadlines: a fraction of the shortest,
// so one passes at most that much late.
milliseconds TickFor(const HttpServerOptions& o) {
  const milliseconds shortest = std::min(o.read_timeout, o.idle_timeout);
  return std::clamp<milliseconds>(shortest / 4, milliseconds{10}, milliseconds{1000});
}

// One HTTP/2 connection. Every member is touched only on the stream's strand.
// Reading runs all the time (HTTP/2 frames arrive while requests are
// handled); writing is one async_write at a time of what the H2Connection has
// queued. The session owns itself through its pending handlers, and through
// the answer slots of requests still being handled.
class H2Session final : public Session {
 public:
  H2Session(TlsStream stream, std::shared_ptr<net::ssl::context> tls, ServerCore& server, bool client_verified,
            std::unique_ptr<H2Connection> connection)
      : tls_(std::move(tls)),
        stream_(std::move(stream)),
        strand_(stream_.get_executor()),
        timer_(strand_),
        server_(server),
        connection_(std::move(connection)),
        client_verified_(client_verified),
        tick_(TickFor(server.options)) {}

  ~H2Session() override { server_.Unregister(this); }

  void Start() override {
    if (!server_.Register(this)) {
      error_code ec;
      Socket().close(ec);
      return;
    }
    server_.CountConnection("h2");
    last_activity_ = Clock::now();
    net::post(strand_, [self = Self()] {
      self->Read();
      self->Flush();  // our SETTINGS
      self->Tick();
    });
  }

  void Drain() override {
    net::post(strand_, [self = Self()] {
      if (self->closed_) return;
      self->connection_->Shutdown();  // GOAWAY: requests taken are still answered
      self->Flush();
    });
  }

  [[nodiscard]] const net::any_io_executor& strand() const override { return strand_; }

  void OnAnswer(uint32_t stream, HttpResponse res) override {
    if (auto it = slots_.find(stream); it != slots_.end()) {
      server_.ForgetSlot(it->second);
      slots_.erase(it);
    }
    if (closed_) return;
    try {
      if (res.find(http::field::content_type) == res.end()) res.set(http::field::content_type, "application/json");
      res.prepare_payload();  // Content-Length; throws for e.g. a 204 with a body
    } catch (const std::exception& e) {
      res = JsonErrorResponse(http::status::internal_server_error, absl::StrFormat("internal error: %s", e.what()));
    }
    connection_->Answer(stream, res);
    last_activity_ = Clock::now();
    Flush();
  }

 private:
  [[nodiscard]] std::shared_ptr<H2Session> Self() { return std::static_pointer_cast<H2Session>(shared_from_this()); }
  [[nodiscard]] tcp::socket& Socket() { return stream_.next_layer(); }

  void Read() {
    stream_.async_read_some(net::buffer(read_buffer_), [self = Self()](error_code ec, size_t n) {
      if (self->closed_) return;
      if (ec) return self->Close();  // the peer went (or TLS broke): nobody to answer
      self->last_activity_ = Clock::now();
      const absl::Status received =
          self->connection_->Receive(std::string_view(self->read_buffer_.data(), n), self->last_activity_);
      self->Dispatch();
      if (!received.ok()) {
        // nghttp2 queued a GOAWAY saying why; send it, then close.
        self->broken_ = true;
        return self->Flush();
      }
      self->Flush();
      if (!self->closed_) self->Read();
    });
  }

  // Hands each request received whole to the handler.
  void Dispatch() {
    for (H2Connection::Request& r : connection_->TakeRequests()) {
      std::shared_ptr<AnswerSlot> slot = server_.OpenSlot(shared_from_this(), r.stream);
      slots_[r.stream] = slot;
      server_.Handle(std::move(r.request), HttpResponder(std::move(slot)), client_verified_);
    }
  }

  // Writes what the connection has queued, one write at a time; closes once
  // it has nothing left to do (a GOAWAY sent or received and every stream
  // done, or a protocol error told).
  void Flush() {
    if (writing_ || closed_) return;
    output_.clear();
    connection_->TakeOutput(output_);
    if (output_.empty()) {
      if (broken_ || !connection_->Alive()) Close();
      return;
    }
    writing_ = true;
    write_started_ = Clock::now();
    net::async_write(stream_, net::buffer(output_), [self = Self()](error_code ec, size_t) {
      self->writing_ = false;
      if (self->closed_) return;
      if (ec) return self->Close();
      self->Flush();
    });
  }

  // The deadlines, looked at every tick_: a write stalled past read_timeout
  // closes the connection; a request not whole within read_timeout is reset;
  // a connection without streams for idle_timeout says GOAWAY and closes.
  void Tick() {
    const Clock::time_point now = Clock::now();
    const HttpServerOptions& o = server_.options;
    if (writing_ && now - write_started_ > o.read_timeout) return Close();
    connection_->ResetRequestsStartedBefore(now - o.read_timeout);
    if (connection_->open_streams() == 0 && now - last_activity_ > o.idle_timeout) connection_->Shutdown();
    Flush();
    if (closed_) return;
    timer_.expires_after(tick_);
    timer_.async_wait([self = Self()](error_code ec) {
      if (ec || self->closed_) return;
      self->Tick();
    });
  }

  // Closing the socket ends the pending read and write; the answers still
  // owed find the session closed and are dropped.
  void Close() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    error_code ec;
    Socket().shutdown(tcp::socket::shutdown_both, ec);
    Socket().close(ec);
  }

  std::shared_ptr<net::ssl::context> tls_;  // outlives stream_
  TlsStream stream_;
  const net::any_io_executor strand_;  // stream_'s
  net::steady_timer timer_;
  ServerCore& server_;
  std::unique_ptr<H2Connection> connection_;
  const bool client_verified_;
  const milliseconds tick_;
  // Requests with the handler, by stream: their slots leave the server's
  // registry when answered.
  std::unordered_map<uint32_t, std::shared_ptr<AnswerSlot>> slots_;
  std::array<char, 16 << 10> read_buffer_;
  std::string output_;  // being written
  bool writing_ = false;
  bool broken_ = false;
  bool closed_ = false;
  Clock::time_point last_activity_{};
  Clock::time_point write_started_{};
};

}  // namespace

void OfferHttp2(net::ssl::context& ctx) { SSL_CTX_set_alpn_select_cb(ctx.native_handle(), &SelectProtocol, nullptr); }

bool NegotiatedHttp2(SSL* ssl) {
  const unsigned char* protocol = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl, &protocol, &length);
  return length == 2 && protocol[0] == 'h' && protocol[1] == '2';
}

void StartHttp2Session(TlsStream stream, std::shared_ptr<net::ssl::context> tls, ServerCore& server,
                       bool client_verified) {
  H2ConnectionHooks hooks;
  hooks.reserve_body = [&server](uint64_t bytes) { return server.ReserveBody(bytes); };
  hooks.release_body = [&server](uint64_t bytes) { server.ReleaseBody(bytes); };
  hooks.count_rejection = [&server](http::status status) { server.CountRejection(status); };
  absl::StatusOr<std::unique_ptr<H2Connection>> connection = H2Connection::Create(server.options, std::move(hooks));
  if (!connection.ok()) {
    std::fprintf(stderr, "tessera http: cannot serve HTTP/2 on a connection: %s\n",
                 std::string(connection.status().message()).c_str());
    error_code ec;
    stream.next_layer().close(ec);
    return;
  }
  std::make_shared<H2Session>(std::move(stream), std::move(tls), server, client_verified, *std::move(connection))
      ->Start();
}

}  // namespace tessera::http_internal
