#include "k8s/client/api_client.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "k8s/internal/json.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

// How often a blocked stream read looks at its stop flag.
constexpr std::chrono::milliseconds kStopCheckInterval{100};
// A watch event is one object; anything longer than this is not a real event.
constexpr size_t kMaxLineBytes = size_t{64} << 20;

std::chrono::milliseconds Until(absl::Time deadline) {
  return std::chrono::milliseconds(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
}

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

// `host`:`port` as an endpoint when both are numbers (an IPv4 or IPv6
// address, a port 1..65535); nullopt when the host is a name to look up.
std::optional<tcp::endpoint> NumericEndpoint(const std::string& host, const std::string& port) {
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  uint32_t number = 0;
  if (ec || !absl::SimpleAtoi(port, &number) || number == 0 || number > 65535) return std::nullopt;
  return tcp::endpoint(address, static_cast<uint16_t>(number));
}

absl::Status TransportError(std::string_view what, const beast::error_code& ec) {
  if (ec == beast::error::timeout) return absl::DeadlineExceededError(absl::StrCat(Absl(what), ": timed out"));
  return absl::UnavailableError(absl::StrCat(Absl(what), ": ", ec.message()));
}

}  // namespace

std::string StatusMessage(std::string_view body) {
  simdjson::dom::element root;
  if (internal::ParseJson(body).get(root) == simdjson::SUCCESS) {
    std::string_view m;
    if (root["message"].get(m) == simdjson::SUCCESS && !m.empty()) return std::string(m);
  }
  return std::string(body.substr(0, 200));
}

struct ApiClient::Tls {
  ssl::context context{ssl::context::tls_client};
};

struct ApiClient::Connection {
  explicit Connection(ssl::context& tls) : stream(io, tls) {}

  // Runs this connection's io_context until `done`; if `stop` becomes true
  // first, cancels the socket so the pending operation completes (aborted).
  void RunUntil(const bool& done, const std::atomic<bool>* stop) {
    io.restart();
    while (!done) {
      io.run_for(kStopCheckInterval);
      if (done) break;
      if (io.stopped()) io.restart();
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) beast::get_lowest_layer(stream).cancel();
    }
  }

  asio::io_context io;  // first: the stream below uses it
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  absl::Time idle_since;  // when it last went back to the idle list
};

absl::StatusOr<std::unique_ptr<ApiClient>> ApiClient::Create(ApiServerConfig config, ApiClientOptions options) {
  auto tls = std::make_unique<Tls>();
  beast::error_code ec;
  tls->context.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                           ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (!config.ca_pem.empty()) {
    tls->context.add_certificate_authority(asio::buffer(config.ca_pem), ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("certificate authority: not a PEM certificate: ", ec.message()));
  } else {
    tls->context.set_default_verify_paths(ec);
    if (ec) return absl::InternalError(absl::StrCat("system certificate authorities: ", ec.message()));
  }
  if (!config.client_cert_pem.empty()) {
    tls->context.use_certificate_chain(asio::buffer(config.client_cert_pem), ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("client certificate: ", ec.message()));
    tls->context.use_private_key(asio::buffer(config.client_key_pem), ssl::context::pem, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("client key: ", ec.message()));
  }
  if (config.host.empty()) return absl::InvalidArgumentError("API server host is empty");
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(config), std::move(options), std::move(tls)));
}

ApiClient::ApiClient(ApiServerConfig config, ApiClientOptions options, std::unique_ptr<Tls> tls)
    : config_(std::move(config)), options_(std::move(options)), tls_(std::move(tls)), token_(config_) {}

ApiClient::~ApiClient() = default;

absl::StatusOr<std::unique_ptr<ApiClient::Connection>> ApiClient::Connect(absl::Time deadline) {
  auto c = std::make_unique<Connection>(tls_->context);
  if (!IsIpAddress(config_.host)) {
    // SNI: an API server behind a load balancer picks its certificate by name.
    SSL_set_tlsext_host_name(c->stream.native_handle(), config_.host.c_str());
  }
  if (config_.insecure_skip_tls_verify) {
    c->stream.set_verify_mode(ssl::verify_none);
  } else {
    c->stream.set_verify_mode(ssl::verify_peer);
    c->stream.set_verify_callback(ssl::host_name_verification(config_.host));
  }

  beast::tcp_stream& socket = beast::get_lowest_layer(c->stream);
  beast::error_code result;
  std::string_view step = "resolve";
  bool done = false;
  socket.expires_after(Until(deadline));
  auto connect_then_handshake = [&](const auto& endpoints) {
    step = "connect";
    socket.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) { result = ec; done = true; return; }
      step = "TLS handshake";
      c->stream.async_handshake(ssl::stream_base::client, [&](beast::error_code ec2) {
        result = ec2;
        done = true;
      });
    });
  };
  // An address needs no lookup; Asio runs each io_context's lookups on a
  // thread of its own, which would then idle beside every kept connection
  // (64 of them for the binds). In a cluster the API server is an address
  // (KUBERNETES_SERVICE_HOST); a kubeconfig may name a host.
  std::optional<tcp::resolver> resolver;
  if (const std::optional<tcp::endpoint> address = NumericEndpoint(config_.host, config_.port)) {
    connect_then_handshake(std::array<tcp::endpoint, 1>{*address});
  } else {
    resolver.emplace(c->io);
    resolver->async_resolve(config_.host, config_.port, [&](beast::error_code ec, tcp::resolver::results_type found) {
      if (ec) { result = ec; done = true; return; }
      connect_then_handshake(found);
    });
  }
  c->RunUntil(done, nullptr);
  if (result) {
    return TransportError(absl::StrCat(Absl(step), " to https://", config_.host, ":", config_.port), result);
  }
  return c;
}

std::unique_ptr<ApiClient::Connection> ApiClient::TakeIdle() {
  std::unique_ptr<Connection> c;
  {
    absl::MutexLock lock(&idle_mu_);
    // The list is oldest first: the last is the most recently used, and when
    // it is too old, so are all the others.
    if (idle_.empty()) return nullptr;
    if (options_.clock->Now() - idle_.back()->idle_since > options_.max_idle_age) {
      idle_.clear();
      return nullptr;
    }
    c = std::move(idle_.back());
    idle_.pop_back();
  }
  return c;
}

void ApiClient::ReturnIdle(std::unique_ptr<Connection> c) {
  c->idle_since = options_.clock->Now();
  absl::MutexLock lock(&idle_mu_);
  if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(c));
}

size_t ApiClient::idle_connections() {
  absl::MutexLock lock(&idle_mu_);
  return idle_.size();
}

absl::StatusOr<size_t> ApiClient::KeepWarm(size_t connections, absl::Time deadline, const std::atomic<bool>* stop) {
  size_t missing = 0;
  {
    absl::MutexLock lock(&idle_mu_);
    const absl::Time stale = options_.clock->Now() - options_.max_idle_age;
    const auto fresh = std::find_if(idle_.begin(), idle_.end(),
                                    [&](const std::unique_ptr<Connection>& c) { return c->idle_since >= stale; });
    idle_.erase(idle_.begin(), fresh);  // each a close(2), no TLS goodbye: cheap under the lock
    connections = std::min(connections, options_.max_idle_connections);
    missing = connections > idle_.size() ? connections - idle_.size() : 0;
  }
  size_t opened = 0;
  for (; opened < missing; ++opened) {
    if (absl::Now() >= deadline || (stop != nullptr && stop->load())) break;
    absl::StatusOr<std::unique_ptr<Connection>> c = Connect(std::min(deadline, absl::Now() + options_.connect_timeout));
    if (!c.ok()) {
      if (opened == 0) return c.status();
      break;
    }
    ReturnIdle(*std::move(c));
  }
  return opened;
}

absl::StatusOr<std::string> ApiClient::AuthorizationHeader() {
  absl::StatusOr<std::string> token = token_.Get();
  if (!token.ok()) return token.status();
  if (token->empty()) return std::string();
  return absl::StrCat("Bearer ", *token);
}

absl::StatusOr<ApiResponse> ApiClient::Send(std::string_view method, std::string_view target, std::string_view body,
                                            std::string_view content_type, absl::Time deadline_cap) {
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) return absl::InvalidArgumentError(absl::StrCat("unknown HTTP method ", Absl(method)));
  absl::StatusOr<std::string> authorization = AuthorizationHeader();
  if (!authorization.ok()) return authorization.status();

  http::request<http::string_body> request{verb, absl::StrCat(config_.base_path, Absl(target)), 11};
  request.set(http::field::host, absl::StrCat(config_.host, ":", config_.port));
  request.set(http::field::user_agent, options_.user_agent);
  request.set(http::field::accept, "application/json");
  if (!authorization->empty()) request.set(http::field::authorization, *authorization);
  if (!content_type.empty()) request.set(http::field::content_type, content_type);
  request.keep_alive(true);
  request.body() = std::string(body);
  request.prepare_payload();

  const absl::Time deadline = std::min(deadline_cap, absl::Now() + options_.request_timeout);
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat(Absl(method), " ", Absl(target), ": no time left to send it"));
  }
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Connection> c = attempt == 0 ? TakeIdle() : nullptr;
    const bool reused = c != nullptr;
    if (!reused) {
      absl::StatusOr<std::unique_ptr<Connection>> fresh = Connect(std::min(deadline, absl::Now() + options_.connect_timeout));
      if (!fresh.ok()) return fresh.status();
      c = std::move(*fresh);
    }
    beast::tcp_stream& socket = beast::get_lowest_layer(c->stream);
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_response_bytes);
    beast::error_code result;
    bool done = false;
    socket.expires_after(Until(deadline));
    http::async_write(c->stream, request, [&](beast::error_code ec, size_t) {
      if (ec) { result = ec; done = true; return; }
      http::async_read(c->stream, c->buffer, parser, [&](beast::error_code ec2, size_t) {
        result = ec2;
        done = true;
      });
    });
    c->RunUntil(done, nullptr);
    if (result) {
      // The server may close an idle keep-alive connection just as we reuse
      // it; that is not the server's answer, so try once more on a new one.
      // (Only where a repeat is safe: ApiClientOptions::retry_on_reused_connection.)
      if (reused && !parser.got_some() && result != beast::error::timeout && options_.retry_on_reused_connection) {
        continue;
      }
      return TransportError(absl::StrCat(Absl(method), " ", Absl(target)), result);
    }
    http::response<http::string_body> response = parser.release();
    ApiResponse out{static_cast<int>(response.result_int()), std::move(response.body())};
    if (response.keep_alive()) ReturnIdle(std::move(c));
    return out;
  }
}

absl::StatusOr<StreamEnd> ApiClient::Stream(std::string_view target, absl::Duration idle_timeout,
                                            const std::atomic<bool>& stop,
                                            absl::FunctionRef<bool(std::string_view)> on_line,
                                            absl::FunctionRef<void()> on_batch_end,
                                            const std::function<void()>& on_open) {
  absl::StatusOr<std::string> authorization = AuthorizationHeader();
  if (!authorization.ok()) return authorization.status();
  absl::StatusOr<std::unique_ptr<Connection>> connected = Connect(absl::Now() + options_.connect_timeout);
  if (!connected.ok()) return connected.status();
  Connection& c = **connected;
  beast::tcp_stream& socket = beast::get_lowest_layer(c.stream);

  http::request<http::empty_body> request{http::verb::get, absl::StrCat(config_.base_path, Absl(target)), 11};
  request.set(http::field::host, absl::StrCat(config_.host, ":", config_.port));
  request.set(http::field::user_agent, options_.user_agent);
  request.set(http::field::accept, "application/json");
  if (!authorization->empty()) request.set(http::field::authorization, *authorization);

  http::response_parser<http::buffer_body> parser;
  // A watch runs for minutes. (Not boost::none: Beast 1.74 compares a
  // Content-Length against an empty optional and refuses every such body.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code result;
  bool done = false;
  socket.expires_after(std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.request_timeout)));
  http::async_write(c.stream, request, [&](beast::error_code ec, size_t) {
    if (ec) { result = ec; done = true; return; }
    http::async_read_header(c.stream, c.buffer, parser, [&](beast::error_code ec2, size_t) {
      result = ec2;
      done = true;
    });
  });
  c.RunUntil(done, &stop);
  StreamEnd end;
  if (stop.load()) {
    end.stopped = true;
    return end;
  }
  if (result) return TransportError(absl::StrCat("watch ", Absl(target)), result);
  end.status = static_cast<int>(parser.get().result_int());
  if (end.status == 200 && on_open) on_open();

  std::string pending;  // bytes of a line not yet ended
  std::vector<char> chunk(64 * 1024);
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    result = {};
    done = false;
    socket.expires_after(std::chrono::milliseconds(absl::ToInt64Milliseconds(idle_timeout)));
    http::async_read_some(c.stream, c.buffer, parser, [&](beast::error_code ec, size_t) {
      result = ec;
      done = true;
    });
    c.RunUntil(done, &stop);
    if (result == http::error::need_buffer) result = {};
    const size_t got = chunk.size() - parser.get().body().size;
    if (stop.load()) {
      end.stopped = true;
      return end;
    }
    if (end.status != 200) {
      // An error answer: keep its body (a Status object) for the caller.
      end.error_body.append(chunk.data(), std::min(got, size_t{1} << 20));
    } else {
      std::string_view data(chunk.data(), got);
      while (!data.empty()) {
        const size_t newline = data.find('\n');
        if (newline == std::string_view::npos) {
          pending.append(data);
          if (pending.size() > kMaxLineBytes) {
            return absl::ResourceExhaustedError(absl::StrCat("watch ", Absl(target), ": a line longer than ",
                                                             kMaxLineBytes, " bytes"));
          }
          break;
        }
        std::string_view line = data.substr(0, newline);
        data.remove_prefix(newline + 1);
        bool more;
        if (!pending.empty()) {
          pending.append(line);
          more = on_line(pending);
          pending.clear();
        } else {
          more = on_line(line);
        }
        if (!more) return end;
      }
      if (got > 0) on_batch_end();
    }
    if (result) {
      if (parser.is_done()) break;
      return TransportError(absl::StrCat("watch ", Absl(target)), result);
    }
  }
  if (!pending.empty() && end.status == 200) on_line(pending);
  return end;
}

}  // namespace tessera::k8s
