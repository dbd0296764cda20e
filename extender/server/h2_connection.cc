#include "extender/server/h2_connection.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <utility>

#include <nghttp2/nghttp2.h>

#include <boost/beast/http/field.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;

// Per-stream receive window: a filter body of a few MB (whole Node objects)
// arrives without waiting for WINDOW_UPDATEs; the connection's is larger so
// several can. What is received is bounded by the body limits, not by these.
constexpr int32_t kStreamWindow = 1 << 20;
constexpr int32_t kConnectionWindow = 16 << 20;

// RFC 9113 §6.5.2: a header field's size is its name and value plus 32.
constexpr uint64_t kHeaderFieldOverhead = 32;

// HTTP/2 forbids these (RFC 9113 §8.2.2); the HTTP/1.1 handlers may set them.
bool IsConnectionSpecific(std::string_view lower_name) {
  return lower_name == "connection" || lower_name == "keep-alive" || lower_name == "proxy-connection" ||
         lower_name == "transfer-encoding" || lower_name == "upgrade";
}

}  // namespace

struct H2Connection::Stream {
  HttpRequest request;
  std::string body;
  uint64_t header_bytes = 0;
  uint64_t reserved = 0;  // of the server's body budget
  Clock::time_point opened{};
  bool complete = false;  // the request's END_STREAM arrived
  bool rejected = false;  // answered by the connection; the rest is discarded
  bool answered = false;
  // The answer's body and how much of it nghttp2 has taken.
  std::string response_body;
  size_t response_sent = 0;
};

// nghttp2's C callbacks, with the connection as user_data.
struct H2Connection::Callbacks {
  static H2Connection& Self(void* user_data) { return *static_cast<H2Connection*>(user_data); }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    H2Connection& c = Self(user_data);
    auto s = std::make_unique<Stream>();
    s->request.version(20);
    s->opened = c.now_;
    c.streams_[static_cast<uint32_t>(frame->hd.stream_id)] = std::move(s);
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t /*flags*/, void* user_data) {
    H2Connection& c = Self(user_data);
    const uint32_t id = static_cast<uint32_t>(frame->hd.stream_id);
    auto it = c.streams_.find(id);
    if (it == c.streams_.end() || frame->hd.type != NGHTTP2_HEADERS) return 0;
    Stream& s = *it->second;
    if (s.rejected) return 0;
    s.header_bytes += namelen + valuelen + kHeaderFieldOverhead;
    if (s.header_bytes > c.header_limit_) {
      c.Reject(id, s, http::status::request_header_fields_too_large,
               absl::StrFormat("request header exceeds the %d-byte limit", c.header_limit_));
      return 0;
    }
    // Trailers count against the limit but say nothing the handlers read.
    if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    const std::string_view n(reinterpret_cast<const char*>(name), namelen);
    const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    // nghttp2 has checked the names (lower case, valid characters) and the
    // pseudo-headers' rules (each once, before the others, none unknown).
    if (n == ":method") {
      s.request.method_string(v);
    } else if (n == ":path") {
      s.request.target(v);
    } else if (n == ":authority") {
      s.request.set(http::field::host, v);
    } else if (!n.empty() && n[0] == ':') {
      // :scheme (and :protocol): nothing the handlers read.
    } else {
      if (n == "content-length") {
        uint64_t length = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), length);
        if (ec == std::errc() && end == v.data() + v.size() && length > c.body_limit_) {
          c.Reject(id, s, http::status::payload_too_large,
                   absl::StrFormat("request body exceeds the %d-byte limit", c.body_limit_));
          return 0;
        }
      }
      s.request.insert(n, v);
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session*, uint8_t /*flags*/, int32_t stream_id, const uint8_t* data, size_t len,
                         void* user_data) {
    H2Connection& c = Self(user_data);
    auto it = c.streams_.find(static_cast<uint32_t>(stream_id));
    if (it == c.streams_.end()) return 0;
    Stream& s = *it->second;
    if (s.rejected) return 0;
    if (s.body.size() + len > c.body_limit_) {
      c.Reject(it->first, s, http::status::payload_too_large,
               absl::StrFormat("request body exceeds the %d-byte limit", c.body_limit_));
      return 0;
    }
    if (c.hooks_.reserve_body && !c.hooks_.reserve_body(len)) {
      c.Reject(it->first, s, http::status::service_unavailable,
               "server busy: request bodies in flight would exceed the server's budget; retry");
      return 0;
    }
    s.reserved += len;
    s.body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  static int OnFrameReceived(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
    H2Connection& c = Self(user_data);
    const uint32_t id = static_cast<uint32_t>(frame->hd.stream_id);
    auto it = c.streams_.find(id);
    if (it == c.streams_.end()) return 0;
    Stream& s = *it->second;
    s.complete = true;
    if (s.rejected) return 0;
    Request whole{id, std::move(s.request)};
    whole.request.body() = std::move(s.body);
    whole.request.prepare_payload();  // Content-Length as HTTP/1.1 handlers expect
    c.ready_.push_back(std::move(whole));
    s.request = {};
    s.body = {};
    return 0;
  }

  static int OnFrameSent(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
    H2Connection& c = Self(user_data);
    const uint32_t id = static_cast<uint32_t>(frame->hd.stream_id);
    auto it = c.streams_.find(id);
    // Answered early while the request still arrives (RFC 9113 §8.1): the
    // client may stop sending.
    if (it != c.streams_.end() && !it->second->complete) c.resets_after_answer_.push_back(id);
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t /*error_code*/, void* user_data) {
    H2Connection& c = Self(user_data);
    auto it = c.streams_.find(static_cast<uint32_t>(stream_id));
    if (it == c.streams_.end()) return 0;
    if (it->second->reserved > 0 && c.hooks_.release_body) c.hooks_.release_body(it->second->reserved);
    c.streams_.erase(it);
    return 0;
  }

  static ssize_t ReadAnswerBody(nghttp2_session*, int32_t /*stream_id*/, uint8_t* buf, size_t length,
                                uint32_t* data_flags, nghttp2_data_source* source, void*) {
    Stream& s = *static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, s.response_body.size() - s.response_sent);
    std::memcpy(buf, s.response_body.data() + s.response_sent, n);
    s.response_sent += n;
    if (s.response_sent == s.response_body.size()) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      s.response_body = {};
      s.response_sent = 0;
    }
    return static_cast<ssize_t>(n);
  }
};

H2Connection::H2Connection(const HttpServerOptions& options, H2ConnectionHooks hooks)
    : body_limit_(options.body_limit), header_limit_(options.header_limit), hooks_(std::move(hooks)) {}

absl::StatusOr<std::unique_ptr<H2Connection>> H2Connection::Create(const HttpServerOptions& options,
                                                                   H2ConnectionHooks hooks) {
  std::unique_ptr<H2Connection> c(new H2Connection(options, std::move(hooks)));
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return absl::ResourceExhaustedError("nghttp2: out of memory");
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Callbacks::OnFrameReceived);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &Callbacks::OnFrameSent);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Callbacks::OnStreamClose);
  // nghttp2 refuses streams past MAX_CONCURRENT_STREAMS itself, from the
  // moment our SETTINGS are queued (not only once acknowledged).
  const int rv = nghttp2_session_server_new(&c->session_, callbacks, c.get());
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) return absl::InternalError(absl::StrFormat("nghttp2: %s", nghttp2_strerror(rv)));

  const std::array<nghttp2_settings_entry, 3> settings = {{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, std::max<uint32_t>(options.max_concurrent_streams, 1)},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, options.header_limit},
  }};
  if (int err = nghttp2_submit_settings(c->session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size()); err != 0) {
    return absl::InternalError(absl::StrFormat("nghttp2 settings: %s", nghttp2_strerror(err)));
  }
  if (int err = nghttp2_session_set_local_window_size(c->session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
      err != 0) {
    return absl::InternalError(absl::StrFormat("nghttp2 window: %s", nghttp2_strerror(err)));
  }
  return c;
}

H2Connection::~H2Connection() {
  // Streams still open give their budget back (nghttp2_session_del does not
  // call the close callback).
  if (hooks_.release_body) {
    for (auto& [id, s] : streams_) {
      if (s->reserved > 0) hooks_.release_body(s->reserved);
    }
  }
  nghttp2_session_del(session_);
}

absl::Status H2Connection::Receive(std::string_view bytes, Clock::time_point now) {
  now_ = now;
  const ssize_t rv =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  FlushDeferred();
  if (rv < 0) {
    failed_ = true;
    // A bad preface or a flood: nghttp2 has queued its GOAWAY where it can.
    if (rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC) {
      return absl::InvalidArgumentError("not an HTTP/2 client: the connection preface is missing");
    }
    return absl::InvalidArgumentError(absl::StrFormat("HTTP/2: %s", nghttp2_strerror(static_cast<int>(rv))));
  }
  return absl::OkStatus();
}

std::vector<H2Connection::Request> H2Connection::TakeRequests() { return std::exchange(ready_, {}); }

void H2Connection::Reject(uint32_t stream, Stream& s, http::status status, std::string_view reason) {
  s.rejected = true;
  s.request = {};
  s.body = {};
  HttpResponse res = JsonErrorResponse(status, reason);
  if (status == http::status::service_unavailable) res.set(http::field::retry_after, "1");
  if (hooks_.count_rejection) hooks_.count_rejection(status);
  rejections_.emplace_back(stream, std::move(res));
}

void H2Connection::FlushDeferred() {
  for (auto& [id, res] : std::exchange(rejections_, {})) {
    auto it = streams_.find(id);
    if (it != streams_.end()) Submit(id, *it->second, res);
  }
}

void H2Connection::Answer(uint32_t stream, const HttpResponse& response) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second->rejected) return;
  Submit(stream, *it->second, response);
}

void H2Connection::Submit(uint32_t stream, Stream& s, const HttpResponse& response) {
  if (s.answered) return;
  s.answered = true;
  std::vector<std::string> names;  // lower-cased copies, alive until submitted
  std::vector<std::string_view> values;
  const std::string status = std::to_string(response.result_int());
  names.reserve(16);
  for (const auto& field : response) {
    std::string name(field.name_string().data(), field.name_string().size());
    absl::AsciiStrToLower(&name);
    if (IsConnectionSpecific(name)) continue;
    names.push_back(std::move(name));
    values.emplace_back(field.value().data(), field.value().size());
  }
  std::vector<nghttp2_nv> nva;
  nva.reserve(names.size() + 1);
  auto nv = [](std::string_view n, std::string_view v) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                      NGHTTP2_NV_FLAG_NONE};  // nghttp2 copies both
  };
  nva.push_back(nv(":status", status));
  for (size_t i = 0; i < names.size(); ++i) nva.push_back(nv(names[i], values[i]));
  s.response_body = response.body();
  s.response_sent = 0;
  nghttp2_data_provider body{};
  body.source.ptr = &s;
  body.read_callback = &Callbacks::ReadAnswerBody;
  const int32_t id = static_cast<int32_t>(stream);
  const bool has_body = !s.response_body.empty();
  if (nghttp2_submit_response(session_, id, nva.data(), nva.size(), has_body ? &body : nullptr) != 0) {
    // The stream closed meanwhile, or nghttp2 is out of memory: nobody to answer.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
  }
}

void H2Connection::TakeOutput(std::string& out, size_t max_bytes) {
  const size_t start = out.size();
  while (out.size() - start < max_bytes) {
    for (uint32_t id : std::exchange(resets_after_answer_, {})) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, static_cast<int32_t>(id), NGHTTP2_NO_ERROR);
    }
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) break;  // nothing more now (or out of memory: the connection then ends)
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
}

void H2Connection::Shutdown() {
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                        NGHTTP2_NO_ERROR, nullptr, 0);
}

std::optional<H2Connection::Clock::time_point> H2Connection::ResetRequestsStartedBefore(Clock::time_point cutoff) {
  std::optional<Clock::time_point> oldest;
  for (auto& [id, s] : streams_) {
    if (s->complete || s->rejected) continue;
    if (s->opened < cutoff) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, static_cast<int32_t>(id), NGHTTP2_CANCEL);
      s->rejected = true;  // its close releases the budget
      continue;
    }
    if (!oldest || s->opened < *oldest) oldest = s->opened;
  }
  return oldest;
}

bool H2Connection::Alive() const {
  if (failed_) return false;
  return nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0;
}

}  // namespace tessera
