// An HTTP/2 client for tests, on nghttp2's client session (the library curl
// uses): Http2ClientSession speaks it over bytes (for tests of the server's
// H2Connection without sockets), Http2Exchange over a real TLS connection to
// 127.0.0.1 with ALPN, every call at once on the one connection. Bounded by a
// timeout, so a server that never answers fails a test instead of hanging it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/verb.hpp>

#include "test/testing/http_client.h"
#include "test/testing/https_client.h"

struct nghttp2_session;

namespace tessera::testing {

/// One request of an HTTP/2 exchange.
struct Http2Call {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string target = "/";
  std::string body;
  /// Extra header fields (lower-case names), after the pseudo-headers.
  std::vector<std::pair<std::string, std::string>> headers = {};
  /// Send the body's last DATA frame without END_STREAM: the request never ends.
  bool leave_open = false;
};

/// What came back on one stream.
struct Http2Answer {
  int status = 0;  ///< 0: no answer (the stream was reset, or nothing came)
  std::string body;
  std::map<std::string, std::string> headers;
  uint32_t reset_code = 0;  ///< the RST_STREAM error code, when reset
  bool closed = false;      ///< the stream is closed (answered whole or reset)
};

/// The client side of one HTTP/2 connection, without a socket.
class Http2ClientSession {
 public:
  Http2ClientSession();
  ~Http2ClientSession();
  Http2ClientSession(const Http2ClientSession&) = delete;
  Http2ClientSession& operator=(const Http2ClientSession&) = delete;

  /// Queues `call` on a new stream; returns its id.
  int32_t Submit(const Http2Call& call);
  /// Queues a RST_STREAM (CANCEL) for `stream`: the client gives up on it.
  void Reset(int32_t stream);
  /// What is to be sent to the server now (the preface and SETTINGS first).
  std::string TakeOutput();
  /// Feeds what the server sent; false when it broke the protocol.
  bool Receive(std::string_view bytes);

  [[nodiscard]] const Http2Answer& answer(int32_t stream) { return answers_[stream]; }
  [[nodiscard]] bool AllClosed() const;
  /// Drops what is kept of closed streams (a long-lived client's answers).
  void ForgetClosed();
  /// Whether a GOAWAY arrived, and its last stream id and error code.
  [[nodiscard]] bool goaway() const { return goaway_; }
  [[nodiscard]] int32_t goaway_last_stream() const { return goaway_last_stream_; }
  [[nodiscard]] uint32_t goaway_error() const { return goaway_error_; }
  /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (0 until its SETTINGS came).
  [[nodiscard]] uint32_t max_concurrent_streams() const;

 private:
  struct Callbacks;
  struct Body {
    std::string data;
    size_t sent = 0;
    bool leave_open = false;
  };

  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Http2Answer> answers_;
  std::map<int32_t, std::unique_ptr<Body>> bodies_;
  bool goaway_ = false;
  int32_t goaway_last_stream_ = 0;
  uint32_t goaway_error_ = 0;
};

/// The result of an exchange over TLS.
struct Http2Result {
  std::string alpn;                  ///< the protocol the handshake chose ("" for none)
  std::vector<Http2Answer> answers;  ///< one per call, in the calls' order
  std::string error;                 ///< set when the connection failed or timed out
  bool goaway = false;               ///< the server sent GOAWAY
};

/// Opens one TLS connection to 127.0.0.1:port offering `alpn` (wire order,
/// e.g. {"h2", "http/1.1"}), and when the server chose h2 sends every call at
/// once, each on its own stream, and waits until all are answered or reset.
Http2Result Http2Exchange(uint16_t port, const HttpsClientConfig& config, const std::vector<Http2Call>& calls,
                          const std::vector<std::string>& alpn = {"h2", "http/1.1"},
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace tessera::testing
