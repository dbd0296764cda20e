#include "test/testing/http2_client.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

#include <nghttp2/nghttp2.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/verb.hpp>

namespace tessera::testing {

struct Http2ClientSession::Callbacks {
  static Http2ClientSession& Self(void* user_data) { return *static_cast<Http2ClientSession*>(user_data); }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    Http2Answer& a = Self(user_data).answers_[frame->hd.stream_id];
    const std::string n(reinterpret_cast<const char*>(name), namelen);
    const std::string v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") {
      a.status = std::atoi(v.c_str());
    } else {
      a.headers[n] = v;
    }
    return 0;
  }

  static int OnData(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len, void* user_data) {
    Self(user_data).answers_[stream_id].body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    Http2ClientSession& c = Self(user_data);
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      c.goaway_ = true;
      c.goaway_last_stream_ = frame->goaway.last_stream_id;
      c.goaway_error_ = frame->goaway.error_code;
    } else if (frame->hd.type == NGHTTP2_RST_STREAM) {
      c.answers_[frame->hd.stream_id].reset_code = frame->rst_stream.error_code;
    }
    return 0;
  }

  static int OnClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) {
    Http2Answer& a = Self(user_data).answers_[stream_id];
    a.closed = true;
    if (error_code != 0 && a.reset_code == 0) a.reset_code = error_code;
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    Body& b = *static_cast<Body*>(source->ptr);
    const size_t n = std::min(length, b.data.size() - b.sent);
    std::memcpy(buf, b.data.data() + b.sent, n);
    b.sent += n;
    if (b.sent == b.data.size()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (b.leave_open) *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return static_cast<ssize_t>(n);
  }
};

Http2ClientSession::Http2ClientSession() {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &Callbacks::OnData);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Callbacks::OnFrame);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Callbacks::OnClose);
  nghttp2_session_client_new(&session_, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
}

Http2ClientSession::~Http2ClientSession() { nghttp2_session_del(session_); }

int32_t Http2ClientSession::Submit(const Http2Call& call) {
  const std::string method(boost::beast::http::to_string(call.method));
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", method}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", call.target}};
  if (!call.body.empty()) fields.emplace_back("content-type", "application/json");
  for (const auto& h : call.headers) fields.push_back(h);
  std::vector<nghttp2_nv> nva;
  for (auto& [n, v] : fields) {
    nva.push_back({reinterpret_cast<uint8_t*>(n.data()), reinterpret_cast<uint8_t*>(v.data()), n.size(), v.size(),
                   NGHTTP2_NV_FLAG_NONE});
  }
  auto body = std::make_unique<Body>();
  body->data = call.body;
  body->leave_open = call.leave_open;
  nghttp2_data_provider provider{};
  provider.source.ptr = body.get();
  provider.read_callback = &Callbacks::ReadBody;
  const bool has_body = !call.body.empty() || call.leave_open;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), has_body ? &provider : nullptr,
                                            nullptr);
  if (id > 0) {
    answers_[id];
    bodies_[id] = std::move(body);
  }
  return id;
}

void Http2ClientSession::Reset(int32_t stream) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream, NGHTTP2_CANCEL);
}

std::string Http2ClientSession::TakeOutput() {
  std::string out;
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  return out;
}

bool Http2ClientSession::Receive(std::string_view bytes) {
  return nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) >= 0;
}

bool Http2ClientSession::AllClosed() const {
  return std::all_of(answers_.begin(), answers_.end(), [](const auto& a) { return a.second.closed; });
}

void Http2ClientSession::ForgetClosed() {
  for (auto it = answers_.begin(); it != answers_.end();) {
    if (it->second.closed) {
      bodies_.erase(it->first);
      it = answers_.erase(it);
    } else {
      ++it;
    }
  }
}

uint32_t Http2ClientSession::max_concurrent_streams() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

Http2Result Http2Exchange(uint16_t port, const HttpsClientConfig& config, const std::vector<Http2Call>& calls,
                          const std::vector<std::string>& alpn, std::chrono::milliseconds timeout) {
  namespace net = boost::asio;
  using boost::system::error_code;
  Http2Result result;
  net::io_context io;
  net::ssl::context ctx(net::ssl::context::tls_client);
  error_code ec;
  ctx.add_certificate_authority(net::buffer(config.ca_pem), ec);
  if (ec) return result.error = "bad CA: " + ec.message(), result;
  if (!config.client_cert_pem.empty()) {
    ctx.use_certificate_chain(net::buffer(config.client_cert_pem), ec);
    if (!ec) ctx.use_private_key(net::buffer(config.client_key_pem), net::ssl::context::pem, ec);
    if (ec) return result.error = "bad client certificate: " + ec.message(), result;
  }
  std::string wire;
  for (const std::string& p : alpn) wire += static_cast<char>(p.size()) + p;
  SSL_CTX_set_alpn_protos(ctx.native_handle(), reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned>(wire.size()));
  ctx.set_verify_mode(net::ssl::verify_peer);
  ctx.set_verify_callback(net::ssl::host_name_verification(config.server_name));
  net::ssl::stream<net::ip::tcp::socket> stream(io, ctx);
  stream.next_layer().connect({net::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return result.error = "connect: " + ec.message(), result;

  Http2ClientSession client;
  std::vector<int32_t> ids;
  std::array<char, 16 << 10> buffer;
  std::string out;
  bool done = false;
  std::function<void()> pump;  // writes what the client has, then reads
  std::function<void()> read = [&] {
    stream.async_read_some(net::buffer(buffer), [&](error_code rec, size_t n) {
      if (rec) {
        result.error = "read: " + rec.message();
        done = true;
        return;
      }
      if (!client.Receive(std::string_view(buffer.data(), n))) {
        result.error = "the server broke HTTP/2";
        done = true;
        return;
      }
      if (client.AllClosed()) {
        done = true;
        return;
      }
      pump();
    });
  };
  pump = [&] {
    out = client.TakeOutput();
    if (out.empty()) return read();
    net::async_write(stream, net::buffer(out), [&](error_code wec, size_t) {
      if (wec) {
        result.error = "write: " + wec.message();
        done = true;
        return;
      }
      pump();
    });
  };
  stream.async_handshake(net::ssl::stream_base::client, [&](error_code hs) {
    if (hs) {
      result.error = "handshake: " + hs.message();
      done = true;
      return;
    }
    const unsigned char* chosen = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(stream.native_handle(), &chosen, &length);
    result.alpn.assign(reinterpret_cast<const char*>(chosen), length);
    if (result.alpn != "h2") {
      done = true;
      return;
    }
    for (const Http2Call& call : calls) ids.push_back(client.Submit(call));
    pump();
  });
  io.run_for(timeout);
  if (!done && result.error.empty()) result.error = "timed out";
  for (int32_t id : ids) result.answers.push_back(client.answer(id));
  result.goaway = client.goaway();
  return result;
}

}  // namespace tessera::testing
