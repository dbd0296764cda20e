// The server's HTTP/2 connection (extender/server/h2_connection.h) fed the
// client's preface and then the fuzz input as frames, in pieces whose sizes
// the input's first byte picks (nghttp2 must resume mid-frame). Every request
// handed out is answered, streams still incomplete are reset, and the
// connection is dropped.
//
// Properties: a request handed out keeps to the body limit; the body budget
// the connection takes is all given back (while open and once destroyed it
// never holds more than it took, and never goes negative); the output stays
// bounded; a connection whose input failed is not alive.
#include <string>
#include <string_view>

#include "extender/server/h2_connection.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  namespace http = boost::beast::http;
  static constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  std::string_view frames = fuzz::AsText(data + 1, size - 1);

  HttpServerOptions options;
  options.body_limit = 4096;
  options.header_limit = 1024;
  options.max_concurrent_streams = 8;
  int64_t held = 0;
  H2ConnectionHooks hooks;
  hooks.reserve_body = [&](uint64_t n) {
    if (held + static_cast<int64_t>(n) > 16384) return false;
    held += static_cast<int64_t>(n);
    return true;
  };
  hooks.release_body = [&](uint64_t n) {
    held -= static_cast<int64_t>(n);
    if (held < 0) fuzz::Violated("the connection gave back more body budget than it took");
  };
  {
    absl::StatusOr<std::unique_ptr<H2Connection>> made = H2Connection::Create(options, hooks);
    if (!made.ok()) fuzz::Violated("a connection could not be made");
    H2Connection& connection = **made;
    std::string out;
    bool failed = !connection.Receive(kPreface).ok();
    while (!failed && !frames.empty()) {
      const std::string_view chunk = frames.substr(0, piece);
      frames.remove_prefix(chunk.size());
      failed = !connection.Receive(chunk).ok();
      for (H2Connection::Request& r : connection.TakeRequests()) {
        if (r.request.body().size() > options.body_limit) fuzz::Violated("a body over the limit was handed out");
        HttpResponse res{http::status::ok, 20};
        res.set(http::field::content_type, "application/json");
        res.body() = "{}";
        res.prepare_payload();
        connection.Answer(r.stream, res);
        connection.Answer(r.stream, res);  // a second answer is ignored
      }
      out.clear();
      connection.TakeOutput(out, size_t{64} << 10);
      if (out.size() > (size_t{64} << 10) + (size_t{32} << 10)) fuzz::Violated("one TakeOutput passed its bound");
    }
    connection.ResetRequestsStartedBefore(H2Connection::Clock::now() + std::chrono::hours(1));
    out.clear();
    connection.TakeOutput(out);
    if (failed && connection.Alive()) fuzz::Violated("a connection whose input failed is still alive");
  }
  if (held != 0) fuzz::Violated("body budget still held after the connection went");
  return 0;
}
