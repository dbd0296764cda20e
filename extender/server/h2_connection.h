// The HTTP/2 side of one server connection, without a socket: bytes from the
// peer in, whole requests out, answers in, bytes for the peer out. nghttp2's
// server session does the framing, HPACK, flow control and the protocol's
// checks (including its floods: rapid resets, CONTINUATION, SETTINGS); this
// class adds what the HTTP/1.1 sessions bound, with the same answers:
//
// * a request's header list under header_limit (else 431), its body under
//   body_limit (413; at once when Content-Length says so), and its body's
//   bytes held in the server-wide budget as they arrive (503 with
//   Retry-After when it is spent) — each an early answer, after which the
//   rest of that request is discarded and its stream reset (NO_ERROR);
// * at most max_concurrent_streams requests at once (SETTINGS; a stream
//   beyond it is refused with REFUSED_STREAM, which clients retry);
// * a request not received whole within read_timeout of its first frame is
//   reset (ResetRequestsStartedBefore, driven by the session's timer).
//
// H2Session (h2_session.h) runs it over a TLS stream; the unit tests and the
// fuzzer (fuzz/h2_frames_fuzzer.cc) run it over bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/beast/http/status.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "extender/server/http_server.h"

struct nghttp2_session;

namespace tessera {

/// How an H2Connection reaches the server around it (each may be empty).
struct H2ConnectionHooks {
  /// Takes `bytes` of the server's request-body budget; false when they do
  /// not fit (the request is answered 503). Empty: no budget.
  std::function<bool(uint64_t bytes)> reserve_body;
  /// Gives back what reserve_body took (when the request's stream closes).
  std::function<void(uint64_t bytes)> release_body;
  /// Counts an answer the connection gave itself (413, 431, 503).
  std::function<void(boost::beast::http::status)> count_rejection;
};

class H2Connection {
 public:
  using Clock = std::chrono::steady_clock;

  /// One whole request and the stream its answer goes to.
  struct Request {
    uint32_t stream = 0;
    HttpRequest request;  ///< version 20; pseudo-headers as method, target and Host
  };

  /// A server session with `options`' limits, its SETTINGS already queued
  /// for TakeOutput. Expects the client's connection preface first.
  static absl::StatusOr<std::unique_ptr<H2Connection>> Create(const HttpServerOptions& options,
                                                              H2ConnectionHooks hooks = {});
  ~H2Connection();
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  /// Feeds what the peer sent. An error means the connection is broken
  /// (a bad preface, a protocol error, a flood): a GOAWAY saying so is
  /// queued when one can be; write out what TakeOutput gives, then close.
  absl::Status Receive(std::string_view bytes, Clock::time_point now = Clock::now());

  /// The requests received whole since the last call, in the order they completed.
  std::vector<Request> TakeRequests();

  /// Answers `stream`'s request with `response`, whose headers go as they
  /// are (lower-cased; the connection-specific ones HTTP/2 forbids dropped):
  /// the caller sets Content-Type and Content-Length. Ignored when the stream
  /// is gone (the peer reset it) or was answered already.
  void Answer(uint32_t stream, const HttpResponse& response);

  /// Appends to `out` what is to be written to the peer now (frames queued
  /// by Receive, Answer, Shutdown and the resets), at most about `max_bytes`.
  void TakeOutput(std::string& out, size_t max_bytes = size_t{256} << 10);

  /// A graceful stop: GOAWAY with the last stream taken, so the peer opens
  /// no more here; the requests taken are still answered.
  void Shutdown();

  /// Resets (CANCEL) every request whose first frame came before `cutoff`
  /// and is not whole yet. Returns when the oldest incomplete one that is
  /// left began (nullopt: none), for the caller's next deadline.
  std::optional<Clock::time_point> ResetRequestsStartedBefore(Clock::time_point cutoff);

  /// False once the connection has nothing left to do: after a GOAWAY (sent
  /// or received) with every stream closed and every frame taken, or once
  /// Receive failed. Then the socket may close (after writing out what
  /// TakeOutput still gives).
  [[nodiscard]] bool Alive() const;

  /// Streams open (requests being received, handled or answered).
  [[nodiscard]] size_t open_streams() const { return streams_.size(); }

 private:
  struct Stream;
  struct Callbacks;

  H2Connection(const HttpServerOptions& options, H2ConnectionHooks hooks);
  // Queues `status` with a JSON reason as the answer to `stream`, counts it,
  // and discards the rest of its request.
  void Reject(uint32_t stream, Stream& s, boost::beast::http::status status, std::string_view reason);
  void Submit(uint32_t stream, Stream& s, const HttpResponse& response);
  void FlushDeferred();

  const size_t body_limit_;
  const uint32_t header_limit_;
  const H2ConnectionHooks hooks_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<uint32_t, std::unique_ptr<Stream>> streams_;
  std::vector<Request> ready_;
  // Decided inside nghttp2's callbacks, submitted after them.
  std::vector<std::pair<uint32_t, HttpResponse>> rejections_;
  std::vector<uint32_t> resets_after_answer_;
  Clock::time_point now_{};
  bool failed_ = false;  // Receive failed: nothing more is read
};

}  // namespace tessera
