#include "test/testing/fake_api_server.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <exception>
#include <future>
#include <list>
#include <mutex>
#include <random>
#include <span>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::testing {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;
using Response = http::response<http::string_body>;
using Request = http::request<http::string_body>;

constexpr int kResourceCount = 2;
// MalformedEvent::kNotJson's line: an event cut off in the middle of its object.
constexpr std::string_view kTruncatedEvent = R"({"type":"MODIFIED","object":{"kind":)";
constexpr size_t kBodyLimit = size_t{64} << 20;
constexpr std::chrono::seconds kHandshakeTimeout{10};
// The first resourceVersion handed out; not 1 so that RVs never look like indexes.
constexpr int64_t kFirstResourceVersion = 1000;

int Index(FakeResource r) { return r == FakeResource::kNodes ? 0 : 1; }
const char* KindOf(FakeResource r) { return r == FakeResource::kNodes ? "Node" : "Pod"; }
const char* PluralOf(FakeResource r) { return r == FakeResource::kNodes ? "nodes" : "pods"; }

// --- Kubernetes JSON ----------------------------------------------------------

// Kubernetes' StatusReason for each HTTP code the fake answers with.
constexpr std::pair<int, const char*> kReasons[] = {
    {400, "BadRequest"},       {401, "Unauthorized"},    {403, "Forbidden"},     {404, "NotFound"},
    {405, "MethodNotAllowed"}, {409, "Conflict"},        {410, "Expired"},       {415, "UnsupportedMediaType"},
    {422, "Invalid"},          {429, "TooManyRequests"}, {500, "InternalError"}, {503, "ServiceUnavailable"},
    {504, "Timeout"},
};

const char* ReasonFor(int code) {
  for (const auto& [known, reason] : kReasons) {
    if (known == code) return reason;
  }
  return "Unknown";
}

json StatusObject(int code, std::string_view message) {
  return json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", ReasonFor(code)},
              {"code", code}};
}

Response JsonResponse(int code, const json& body) {
  Response res{static_cast<http::status>(code), 11};
  res.set(http::field::server, "fake-kube-apiserver");
  res.set(http::field::content_type, "application/json");
  res.body() = body.dump();
  return res;
}

Response StatusResponse(int code, std::string_view message) {
  Response res = JsonResponse(code, StatusObject(code, message));
  if (code == 429 || code == 503) res.set(http::field::retry_after, "1");
  return res;
}

std::string EventLine(std::string_view type, const json& object) {
  std::string line = json{{"type", type}, {"object", object}}.dump();
  line.push_back('\n');
  return line;
}

std::string ExpiredMessage(int64_t requested, int64_t oldest) {
  return absl::StrCat("too old resource version: ", requested, " (", oldest, ")");
}

// Now, or `later` from now, as Kubernetes writes times (to the second).
std::string Rfc3339Now(std::chrono::seconds later = std::chrono::seconds(0)) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + later);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string StringAt(const json& object, std::initializer_list<const char*> path) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return "";
    auto it = at->find(key);
    if (it == at->end()) return "";
    at = &*it;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

std::string PodKey(std::string_view ns, std::string_view name) { return absl::StrCat(Absl(ns), "/", Absl(name)); }

std::string KeyOf(FakeResource resource, const json& object) {
  const std::string name = StringAt(object, {"metadata", "name"});
  return resource == FakeResource::kNodes ? name : PodKey(StringAt(object, {"metadata", "namespace"}), name);
}

// --- field selectors ------------------------------------------------------------

struct FieldRequirement {
  std::string field;
  bool equal = true;
  std::string value;
};

// Parses "a=b,c!=d,e==f". Unknown fields are dropped (ignored, as documented).
std::vector<FieldRequirement> ParseFieldSelector(std::string_view selector) {
  std::vector<FieldRequirement> out;
  for (absl::string_view term : absl::StrSplit(Absl(selector), ',', absl::SkipWhitespace())) {
    FieldRequirement req;
    size_t at = term.find("!=");
    size_t value_at = 0;
    if (at != absl::string_view::npos) {
      req.equal = false;
      value_at = at + 2;
    } else if ((at = term.find("==")) != absl::string_view::npos) {
      value_at = at + 2;
    } else if ((at = term.find('=')) != absl::string_view::npos) {
      value_at = at + 1;
    } else {
      continue;
    }
    req.field = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
    req.value = std::string(absl::StripAsciiWhitespace(term.substr(value_at)));
    if (req.field == "spec.nodeName" || req.field == "status.phase" || req.field == "metadata.name" ||
        req.field == "metadata.namespace") {
      out.push_back(std::move(req));
    }
  }
  return out;
}

bool MatchesSelector(const json& object, const std::vector<FieldRequirement>& selector) {
  for (const FieldRequirement& req : selector) {
    const auto dot = req.field.find('.');
    const std::string actual = StringAt(object, {req.field.substr(0, dot).c_str(), req.field.substr(dot + 1).c_str()});
    if ((actual == req.value) != req.equal) return false;
  }
  return true;
}

// --- URLs ---------------------------------------------------------------------------

int HexValue(char c) { return absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10; }

std::string PercentDecode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < in.size() && absl::ascii_isxdigit(in[i + 1]) && absl::ascii_isxdigit(in[i + 2])) {
      out.push_back(static_cast<char>(HexValue(in[i + 1]) * 16 + HexValue(in[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool ParseBool(std::string_view v) {
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "True" || v == "TRUE";
}

std::string QueryParam(const RecordedRequest& req, const std::string& name) {
  auto it = req.query.find(name);
  return it == req.query.end() ? "" : it->second;
}

// What a path names.
struct Route {
  enum Kind { kUnknown, kList, kGet, kBinding, kBindings, kEviction, kPodStatus } kind = kUnknown;
  FakeResource resource = FakeResource::kPods;
  std::string ns;    // "" for nodes and for all-namespace pod lists
  std::string name;  // kGet, kBinding, kEviction, kPodStatus
};

Route ParseRoute(std::string_view path) {
  std::vector<absl::string_view> seg = absl::StrSplit(Absl(path), '/', absl::SkipEmpty());
  Route r;
  if (seg.size() < 3 || seg[0] != "api" || seg[1] != "v1") return r;
  if (seg[2] == "nodes" && seg.size() <= 4) {
    r.resource = FakeResource::kNodes;
    r.kind = seg.size() == 3 ? Route::kList : Route::kGet;
    if (seg.size() == 4) r.name = std::string(seg[3]);
  } else if (seg[2] == "pods" && seg.size() == 3) {
    r.kind = Route::kList;
  } else if (seg[2] == "namespaces" && seg.size() >= 5) {
    r.ns = std::string(seg[3]);
    if (seg[4] == "bindings" && seg.size() == 5) {
      r.kind = Route::kBindings;
    } else if (seg[4] == "pods") {
      if (seg.size() == 5) r.kind = Route::kList;
      if (seg.size() == 6) r.kind = Route::kGet;
      if (seg.size() == 7 && seg[6] == "binding") r.kind = Route::kBinding;
      if (seg.size() == 7 && seg[6] == "eviction") r.kind = Route::kEviction;
      if (seg.size() == 7 && seg[6] == "status") r.kind = Route::kPodStatus;
      if (seg.size() >= 6) r.name = std::string(seg[5]);
    }
  }
  return r;
}

// The verified client certificate's subject CN, or "" when none was presented.
std::string PeerCommonName(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string cn;
  if (SSL_get_verify_result(ssl) == X509_V_OK) {
    char buf[256] = {};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf) > 0) cn = buf;
  }
  X509_free(cert);
  return cn;
}

bool Matches(const RequestMatch& m, const RecordedRequest& req) {
  return (m.method.empty() || m.method == req.method) && req.path.starts_with(m.path_prefix) &&
         (!m.watch.has_value() || *m.watch == req.watch);
}

}  // namespace

// ============================================================================
// Impl
// ============================================================================

struct FakeApiServer::Impl {
  using SslStream = beast::ssl_stream<beast::tcp_stream>;

  // One TLS connection. Touched only on the io thread.
  struct Connection {
    Connection(tcp::socket socket, ssl::context& tls)
        : stream(beast::tcp_stream(std::move(socket)), tls), timer(stream.get_executor()) {}
    void Close() {
      closed = true;
      error_code ec;
      beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ec);
      beast::get_lowest_layer(stream).close();
      timer.cancel();
    }
    SslStream stream;
    net::steady_timer timer;  // delays and watch waits; cancelled to wake the session
    bool closed = false;
    bool held = false;  // waiting for ReleaseHeld()
  };

  // One open watch stream's controls. Touched only on the io thread.
  struct WatchStream {
    FakeResource resource = FakeResource::kPods;
    std::shared_ptr<Connection> connection;
    bool bookmarks = false;
    std::optional<int> drop_after;  // event lines left before the connection is cut
    std::deque<std::string> raw_lines;
    bool expire = false;
    bool bookmark_now = false;
  };

  struct StoredEvent {
    int64_t rv = 0;
    FakeResource resource = FakeResource::kPods;
    const char* type = "";
    json object;
    json previous;  // MODIFIED: the object before, for selector transitions
  };

  struct FailRule {
    RequestMatch match;
    std::function<bool(const RecordedRequest&)> also;  // extra condition, may be empty
    int status = 500;
    std::string message;
    int remaining = 0;
  };
  struct DelayRule {
    RequestMatch match;
    std::chrono::milliseconds delay{0};
    int remaining = 0;
  };
  struct HoldRule {
    RequestMatch match;
    int remaining = 0;
  };

  explicit Impl(FakeApiServerOptions o) : options(std::move(o)), bearer_token(options.bearer_token) {
    absl::StatusOr<TlsTestCerts> generated = TlsTestCerts::Generate(options.certs);
    if (!generated.ok()) {
      init_error = generated.status();
      return;
    }
    certs = *std::move(generated);
    init_error = ConfigureTls();
  }

  absl::Status ConfigureTls() {
    error_code ec;
    tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                    ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    tls.use_certificate_chain(net::buffer(certs.server.cert_pem), ec);
    if (!ec) tls.use_private_key(net::buffer(certs.server.key_pem), ssl::context::pem, ec);
    if (!ec) tls.add_certificate_authority(net::buffer(certs.ca.cert_pem), ec);
    if (!ec) {
      tls.set_verify_mode(
          options.require_client_cert ? ssl::verify_peer | ssl::verify_fail_if_no_peer_cert : ssl::verify_peer, ec);
    }
    if (ec) return absl::InternalError(absl::StrCat("configuring the fake API server's TLS: ", ec.message()));
    // Ask clients for a certificate signed by the test CA.
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    BIO* bio = BIO_new_mem_buf(certs.ca.cert_pem.data(), static_cast<int>(certs.ca.cert_pem.size()));
    X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (ca != nullptr) sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca)));
    X509_free(ca);
    BIO_free(bio);
    SSL_CTX_set_client_CA_list(tls.native_handle(), names);
    return absl::OkStatus();
  }

  // --- lifecycle -------------------------------------------------------------

  absl::Status Start() {
    std::lock_guard lifecycle(lifecycle_mu);
    if (!init_error.ok()) return init_error;
    if (io != nullptr) return absl::FailedPreconditionError("the fake API server is already running");
    auto context = std::make_unique<net::io_context>(1);
    tcp::acceptor listener(*context);
    error_code ec;
    const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), bound_port.load());
    listener.open(endpoint.protocol(), ec);
    if (!ec) listener.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) listener.bind(endpoint, ec);
    if (!ec) listener.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("fake API server cannot listen on 127.0.0.1:", bound_port.load(), ": ", ec.message()));
    }
    bound_port = listener.local_endpoint().port();
    acceptor = std::make_unique<tcp::acceptor>(std::move(listener));
    io = std::move(context);
    {
      std::lock_guard lock(notify_mu);
      notify_io = io.get();
    }
    net::co_spawn(*io, Accept(), net::detached);
    thread = std::thread([this] { io->run(); });
    return absl::OkStatus();
  }

  void Stop() {
    std::lock_guard lifecycle(lifecycle_mu);
    if (io == nullptr) return;
    RunOnIo([this] {
      error_code ec;
      acceptor->close(ec);
      for (const std::weak_ptr<Connection>& weak : connections) {
        if (std::shared_ptr<Connection> c = weak.lock()) c->Close();
      }
    });
    {
      std::lock_guard lock(notify_mu);
      notify_io = nullptr;
    }
    // Every coroutine now ends (its socket or timer was closed), so run() returns.
    thread.join();
    wake_pending = false;
    held.clear();
    connections.clear();
    watches.clear();
    acceptor.reset();
    io.reset();
  }

  bool running() const {
    std::lock_guard lifecycle(lifecycle_mu);
    return io != nullptr;
  }

  // Runs `fn` on the io thread and waits for it; skipped while stopped.
  // Callers hold lifecycle_mu or run on a test thread (never the io thread).
  void RunOnIo(std::function<void()> fn) {
    if (io == nullptr) return;
    std::promise<void> done;
    net::post(*io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

  void RunOnIoIfRunning(std::function<void()> fn) {
    std::lock_guard lifecycle(lifecycle_mu);
    RunOnIo(std::move(fn));
  }

  // Wakes every watch stream to look for new events (coalesced). Called from
  // test threads and from request handlers on the io thread, so it must not
  // take lifecycle_mu (held by Stop() while it waits for the io thread).
  void NotifyWatchers() {
    std::lock_guard lock(notify_mu);
    if (notify_io == nullptr || wake_pending.exchange(true)) return;
    net::post(*notify_io, [this] {
      wake_pending = false;
      for (const std::shared_ptr<WatchStream>& w : watches) w->connection->timer.cancel();
    });
  }

  // --- network (io thread) -------------------------------------------------------

  net::awaitable<void> Accept() {
    for (;;) {
      error_code ec;
      tcp::socket socket = co_await acceptor->async_accept(net::redirect_error(net::use_awaitable, ec));
      if (!acceptor->is_open()) co_return;
      if (ec) continue;
      ++accepted_connections;
      // Watch events are small writes that must leave at once, not after Nagle's delay.
      socket.set_option(tcp::no_delay(true), ec);
      auto connection = std::make_shared<Connection>(std::move(socket), tls);
      std::erase_if(connections, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
      connections.push_back(connection);
      net::co_spawn(acceptor->get_executor(), Session(connection), net::detached);
    }
  }

  net::awaitable<void> Session(std::shared_ptr<Connection> conn) {
    error_code ec;
    beast::get_lowest_layer(conn->stream).expires_after(kHandshakeTimeout);
    co_await conn->stream.async_handshake(ssl::stream_base::server, net::redirect_error(net::use_awaitable, ec));
    beast::get_lowest_layer(conn->stream).expires_never();
    if (ec || conn->closed) {
      if (!conn->closed) conn->Close();
      co_return;
    }
    const std::string client_cn = PeerCommonName(conn->stream.native_handle());
    beast::flat_buffer buffer;
    while (!conn->closed) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kBodyLimit);
      co_await http::async_read(conn->stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      if (ec || conn->closed) break;
      Request req = parser.release();
      const bool keep = co_await Serve(conn, req, client_cn);
      if (!keep || !req.keep_alive() || conn->closed) break;
    }
    if (!conn->closed) conn->Close();
  }

  // Answers one request; false when the connection must close.
  net::awaitable<bool> Serve(std::shared_ptr<Connection> conn, const Request& req, std::string client_cn) {
    RecordedRequest rec = Record(req, std::move(client_cn));
    const size_t log_index = Log(rec);

    std::optional<std::chrono::milliseconds> delay = TakeDelay(rec);
    if (delay.has_value()) {
      error_code ec;
      conn->timer.expires_after(*delay);
      co_await conn->timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      if (conn->closed) co_return false;
    }
    if (TakeHold(rec)) {
      conn->held = true;
      held.push_back(conn);
      CountHeld(+1);
      while (conn->held && !conn->closed) {
        error_code ec;
        conn->timer.expires_at(net::steady_timer::time_point::max());
        co_await conn->timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      }
      CountHeld(-1);
      if (conn->closed) co_return false;
    }

    std::optional<Response> early = Precheck(rec);
    if (!early.has_value() && rec.watch) {
      const Route route = ParseRoute(rec.path);
      if (rec.method == "GET" && route.kind == Route::kList) {
        co_return co_await ServeWatch(conn, rec, route, log_index);
      }
    }
    Response res = early.has_value() ? *std::move(early) : Handle(rec);
    SetLoggedStatus(log_index, res.result_int());
    if (TakeUnanswered(rec)) {
      conn->Close();
      co_return false;
    }
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    error_code ec;
    co_await http::async_write(conn->stream, res, net::redirect_error(net::use_awaitable, ec));
    co_return !ec;
  }

  // Authentication and injected failures, before the request reaches the store.
  std::optional<Response> Precheck(const RecordedRequest& rec) {
    {
      std::lock_guard lock(mu);
      if (!bearer_token.empty()) {
        auto it = rec.headers.find("authorization");
        if (it == rec.headers.end() || it->second != absl::StrCat("Bearer ", bearer_token)) {
          return StatusResponse(401, "Unauthorized");
        }
      }
      for (auto it = fail_rules.begin(); it != fail_rules.end(); ++it) {
        if (!Matches(it->match, rec) || (it->also && !it->also(rec))) continue;
        Response res = StatusResponse(it->status, it->message);
        if (--it->remaining <= 0) fail_rules.erase(it);
        return res;
      }
    }
    return std::nullopt;
  }

  std::optional<std::chrono::milliseconds> TakeDelay(const RecordedRequest& rec) {
    std::lock_guard lock(mu);
    for (auto it = delay_rules.begin(); it != delay_rules.end(); ++it) {
      if (!Matches(it->match, rec)) continue;
      const std::chrono::milliseconds delay = it->delay;
      if (--it->remaining <= 0) delay_rules.erase(it);
      return delay;
    }
    return std::nullopt;
  }

  bool TakeUnanswered(const RecordedRequest& rec) { return TakeRule(unanswered_rules, rec); }
  bool TakeHold(const RecordedRequest& rec) { return TakeRule(hold_rules, rec); }
  // Whether a rule of `rules` matches `rec`, using one of its count up.
  bool TakeRule(std::list<HoldRule>& rules, const RecordedRequest& rec) {
    std::lock_guard lock(mu);
    for (auto it = rules.begin(); it != rules.end(); ++it) {
      if (!Matches(it->match, rec)) continue;
      if (--it->remaining <= 0) rules.erase(it);
      return true;
    }
    return false;
  }

  static RecordedRequest Record(const Request& req, std::string client_cn) {
    RecordedRequest rec;
    rec.received = std::chrono::steady_clock::now();
    rec.method = std::string(req.method_string());
    rec.target = std::string(req.target());
    const std::string_view target = req.target();
    const size_t q = target.find('?');
    rec.path = PercentDecode(target.substr(0, q), false);
    if (q != std::string_view::npos) {
      for (absl::string_view pair : absl::StrSplit(Absl(target.substr(q + 1)), '&', absl::SkipEmpty())) {
        const size_t eq = pair.find('=');
        rec.query[PercentDecode(Std(pair.substr(0, eq)), true)] =
            eq == absl::string_view::npos ? "" : PercentDecode(Std(pair.substr(eq + 1)), true);
      }
    }
    for (const auto& field : req) {
      rec.headers[absl::AsciiStrToLower(std::string(field.name_string()))] = std::string(field.value());
    }
    rec.body = req.body();
    rec.watch = ParseBool(QueryParam(rec, "watch"));
    rec.client_cert_common_name = std::move(client_cn);
    return rec;
  }

  size_t Log(const RecordedRequest& rec) {
    std::lock_guard lock(mu);
    log.push_back(rec);
    return log_base + log.size() - 1;
  }

  void SetLoggedStatus(size_t index, int status) {
    std::lock_guard lock(mu);
    if (index >= log_base && index - log_base < log.size()) log[index - log_base].status = status;
  }

  // --- watch (io thread) -----------------------------------------------------------

  net::awaitable<bool> ServeWatch(std::shared_ptr<Connection> conn, const RecordedRequest& rec, const Route& route,
                                  size_t log_index) {
    const std::string rv_param = QueryParam(rec, "resourceVersion");
    int64_t from_rv = 0;
    if (!rv_param.empty() && !absl::SimpleAtoi(rv_param, &from_rv)) {
      co_return co_await WriteWhole(conn, rec, log_index,
                                    StatusResponse(400, absl::StrCat("invalid resourceVersion \"", rv_param, "\"")));
    }
    const std::vector<FieldRequirement> selector = ParseFieldSelector(QueryParam(rec, "fieldSelector"));
    auto watch = std::make_shared<WatchStream>();
    watch->resource = route.resource;
    watch->connection = conn;
    watch->bookmarks = ParseBool(QueryParam(rec, "allowWatchBookmarks"));
    Clock::time_point deadline = Clock::time_point::max();
    if (int64_t seconds = 0; absl::SimpleAtoi(QueryParam(rec, "timeoutSeconds"), &seconds) && seconds > 0) {
      deadline = Clock::now() + std::chrono::seconds(seconds);
    }

    // The replay: the whole current state (from "" or "0") or the history after N.
    std::vector<std::string> lines;
    int64_t scanned_rv = 0;
    std::optional<std::string> expired;
    bool malformed_first = false;
    {
      std::lock_guard lock(mu);
      if (int& left = malformed_watches[Index(route.resource)]; left > 0) {
        --left;
        malformed_first = true;
      }
      TooLargeRule& too_large = too_large_watches[Index(route.resource)];
      if (too_large.remaining > 0) {
        --too_large.remaining;
        json status = StatusObject(504, absl::StrCat("Timeout: Too large resource version: ", from_rv + 1,
                                                     ", current: ", from_rv));
        status["details"] = {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                                      {"message", "Too large resource version"}}})},
                             {"retryAfterSeconds", too_large.retry_after_seconds}};
        lines.push_back(EventLine("ERROR", status));
        scanned_rv = -1;  // the stream ends after this event
      } else if (from_rv > 0 && from_rv < compacted_rv) {
        expired = ExpiredMessage(from_rv, compacted_rv);
        lines.push_back(EventLine("ERROR", StatusObject(410, *expired)));
        scanned_rv = -1;  // the stream ends after this event
      } else if (from_rv == 0) {
        const auto& objects = route.resource == FakeResource::kNodes ? nodes : pods;
        for (const auto& [key, object] : objects) {
          if (InScope(object, route.ns, selector)) lines.push_back(EventLine("ADDED", object));
        }
        scanned_rv = rv;
      } else {
        scanned_rv = CollectEvents(route.resource, route.ns, selector, from_rv, lines);
      }
    }

    if (expired.has_value() && options.expired_watch_answer == ExpiredWatchAnswer::kHttp410) {
      co_return co_await WriteWhole(conn, rec, log_index, StatusResponse(410, *expired));
    }

    SetLoggedStatus(log_index, 200);
    http::response<http::empty_body> header{http::status::ok, 11};
    header.set(http::field::server, "fake-kube-apiserver");
    header.set(http::field::content_type, "application/json");
    header.keep_alive(true);
    header.chunked(true);
    http::response_serializer<http::empty_body> serializer{header};
    error_code ec;
    co_await http::async_write_header(conn->stream, serializer, net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return false;

    const int r = Index(route.resource);
    ++watch_connections[r];
    ++open_watches[r];
    watches.push_back(watch);
    if (malformed_first) watch->raw_lines.push_back(std::string(kTruncatedEvent) + "\n");
    for (std::string& line : pending_malformed[r]) watch->raw_lines.push_back(std::move(line));
    pending_malformed[r].clear();
    const bool keep = co_await RunWatch(conn, watch, route, selector, std::move(lines), scanned_rv, deadline);
    --open_watches[r];
    std::erase(watches, watch);
    co_return keep;
  }

  // Writes events until the deadline, a drop, an expiry or a closed connection.
  net::awaitable<bool> RunWatch(std::shared_ptr<Connection> conn, std::shared_ptr<WatchStream> watch,
                                const Route& route, const std::vector<FieldRequirement>& selector,
                                std::vector<std::string> lines, int64_t scanned_rv, Clock::time_point deadline) {
    const auto interval = options.bookmark_interval;
    Clock::time_point next_bookmark =
        watch->bookmarks && interval.count() > 0 ? Clock::now() + interval : Clock::time_point::max();
    for (;;) {
      // Events (the replay on the first pass), then injected lines.
      for (std::string& injected : watch->raw_lines) lines.push_back(std::move(injected));
      watch->raw_lines.clear();
      const bool wrote = !lines.empty();
      size_t allowed = lines.size();
      if (watch->drop_after.has_value()) {
        allowed = std::min(allowed, static_cast<size_t>(std::max(*watch->drop_after, 0)));
        *watch->drop_after -= static_cast<int>(allowed);
      }
      if (!co_await WriteChunks(conn, std::span(lines).first(allowed))) co_return false;
      lines.clear();
      if (watch->drop_after.has_value() && *watch->drop_after <= 0) {
        conn->Close();
        co_return false;
      }
      if (scanned_rv < 0 || watch->expire) {
        if (watch->expire) {
          std::lock_guard lock(mu);
          lines.push_back(EventLine("ERROR", StatusObject(410, ExpiredMessage(scanned_rv, compacted_rv))));
        }
        if (!co_await WriteChunks(conn, lines)) co_return false;
        co_return co_await WriteLastChunk(conn);
      }
      const Clock::time_point now = Clock::now();
      if (watch->bookmark_now || now >= next_bookmark) {
        watch->bookmark_now = false;
        if (interval.count() > 0 && next_bookmark != Clock::time_point::max()) next_bookmark = now + interval;
        json bookmark = {{"kind", KindOf(route.resource)},
                         {"apiVersion", "v1"},
                         {"metadata", {{"resourceVersion", std::to_string(scanned_rv)}}}};
        const std::string line = EventLine("BOOKMARK", bookmark);
        if (!co_await WriteChunks(conn, std::span(&line, 1))) co_return false;
      }
      if (now >= deadline) co_return co_await WriteLastChunk(conn);
      if (conn->closed) co_return false;

      {
        std::lock_guard lock(mu);
        if (scanned_rv < compacted_rv) {
          lines.push_back(EventLine("ERROR", StatusObject(410, ExpiredMessage(scanned_rv, compacted_rv))));
          scanned_rv = -1;
        } else {
          scanned_rv = CollectEvents(route.resource, route.ns, selector, scanned_rv, lines);
        }
      }
      if (!lines.empty() || wrote || !watch->raw_lines.empty() || watch->expire || watch->bookmark_now ||
          (watch->drop_after.has_value() && *watch->drop_after <= 0)) {
        continue;
      }
      // Nothing to write: sleep until woken (new events, a control) or the next bookmark or deadline.
      error_code ec;
      conn->timer.expires_at(std::min(deadline, next_bookmark));
      co_await conn->timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      if (conn->closed) co_return false;
    }
  }

  // Writes each line as its own chunk (one event per chunk, as the real server
  // flushes), several chunks per socket write so replays of many events are fast.
  net::awaitable<bool> WriteChunks(std::shared_ptr<Connection> conn, std::span<const std::string> lines) {
    constexpr size_t kWriteBatch = size_t{256} << 10;
    std::string batch;
    for (size_t i = 0; i < lines.size(); ++i) {
      absl::StrAppend(&batch, absl::Hex(lines[i].size()), "\r\n", lines[i], "\r\n");
      if (batch.size() < kWriteBatch && i + 1 < lines.size()) continue;
      error_code ec;
      co_await net::async_write(conn->stream, net::buffer(batch), net::redirect_error(net::use_awaitable, ec));
      if (ec || conn->closed) co_return false;
      batch.clear();
    }
    co_return true;
  }

  net::awaitable<bool> WriteLastChunk(std::shared_ptr<Connection> conn) {
    error_code ec;
    const auto last = http::make_chunk_last();
    co_await net::async_write(conn->stream, last, net::redirect_error(net::use_awaitable, ec));
    co_return !ec && !conn->closed;
  }

  net::awaitable<bool> WriteWhole(std::shared_ptr<Connection> conn, const RecordedRequest& rec, size_t log_index,
                                  Response res) {
    SetLoggedStatus(log_index, res.result_int());
    res.keep_alive(rec.headers.count("connection") == 0 ||
                   !absl::EqualsIgnoreCase(rec.headers.at("connection"), "close"));
    res.prepare_payload();
    error_code ec;
    co_await http::async_write(conn->stream, res, net::redirect_error(net::use_awaitable, ec));
    co_return !ec;
  }

  // --- the store (callers hold mu) -------------------------------------------------------

  static bool InScope(const json& object, const std::string& ns, const std::vector<FieldRequirement>& selector) {
    return (ns.empty() || StringAt(object, {"metadata", "namespace"}) == ns) && MatchesSelector(object, selector);
  }

  // Appends the event lines after `after_rv` that a watch of `resource` in
  // `ns` with `selector` sees; returns the resourceVersion scanned up to.
  int64_t CollectEvents(FakeResource resource, const std::string& ns, const std::vector<FieldRequirement>& selector,
                        int64_t after_rv, std::vector<std::string>& lines) const {
    auto it = std::upper_bound(history.begin(), history.end(), after_rv,
                               [](int64_t v, const StoredEvent& e) { return v < e.rv; });
    for (; it != history.end(); ++it) {
      if (it->resource != resource) continue;
      const bool now = InScope(it->object, ns, selector);
      const bool before = !it->previous.is_null() && InScope(it->previous, ns, selector);
      std::string_view type = it->type;
      if (type == "MODIFIED") {
        if (!now && !before) continue;
        if (!before) type = "ADDED";
        if (!now) type = "DELETED";
      } else if (!now) {
        continue;
      }
      lines.push_back(EventLine(type, it->object));
    }
    return rv;
  }

  std::map<std::string, json>& Objects(FakeResource resource) {
    return resource == FakeResource::kNodes ? nodes : pods;
  }

  std::string NewUid() {
    std::uniform_int_distribution<uint64_t> dist;
    const uint64_t a = dist(rng);
    const uint64_t b = dist(rng);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                  static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                  static_cast<unsigned>(((b >> 48) & 0x3fff) | 0x8000),
                  static_cast<unsigned long long>(b & 0xffffffffffffULL));
    return buf;
  }

  void Emit(FakeResource resource, const char* type, const json& object, json previous = nullptr) {
    history.push_back(
        {.rv = rv, .resource = resource, .type = type, .object = object, .previous = std::move(previous)});
  }

  absl::StatusOr<json> Add(FakeResource resource, json object) {
    {
      std::lock_guard lock(mu);
      if (!object.is_object()) return absl::InvalidArgumentError("the object must be a JSON object");
      json& meta = object["metadata"];
      if (!meta.is_object() || StringAt(meta, {"name"}).empty()) {
        return absl::InvalidArgumentError("metadata.name is required");
      }
      if (resource == FakeResource::kPods && StringAt(meta, {"namespace"}).empty()) meta["namespace"] = "default";
      const std::string key = KeyOf(resource, object);
      auto& objects = Objects(resource);
      if (objects.contains(key))
        return absl::AlreadyExistsError(absl::StrCat(PluralOf(resource), " \"", key, "\" already exists"));
      if (!object.contains("apiVersion")) object["apiVersion"] = "v1";
      if (!object.contains("kind")) object["kind"] = KindOf(resource);
      if (StringAt(meta, {"uid"}).empty()) meta["uid"] = NewUid();
      if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = Rfc3339Now();
      meta["resourceVersion"] = std::to_string(++rv);
      objects[key] = object;
      Emit(resource, "ADDED", object);
    }
    NotifyWatchers();
    return object;
  }

  // Stores `object` over the existing one under the same key (MODIFIED).
  // Callers hold mu.
  json ReplaceLocked(FakeResource resource, json& stored, json object) {
    json previous = stored;
    object["metadata"]["uid"] = previous["metadata"]["uid"];
    object["metadata"]["name"] = previous["metadata"]["name"];
    if (resource == FakeResource::kPods) object["metadata"]["namespace"] = previous["metadata"]["namespace"];
    object["metadata"]["resourceVersion"] = std::to_string(++rv);
    if (!object.contains("apiVersion")) object["apiVersion"] = "v1";
    if (!object.contains("kind")) object["kind"] = KindOf(resource);
    stored = object;
    Emit(resource, "MODIFIED", object, std::move(previous));
    return object;
  }

  absl::StatusOr<json> Update(FakeResource resource, json object) {
    json stored_copy;
    {
      std::lock_guard lock(mu);
      if (!object.is_object() || !object["metadata"].is_object()) {
        return absl::InvalidArgumentError("the object needs metadata");
      }
      if (resource == FakeResource::kPods && StringAt(object, {"metadata", "namespace"}).empty()) {
        object["metadata"]["namespace"] = "default";
      }
      const std::string key = KeyOf(resource, object);
      auto& objects = Objects(resource);
      auto it = objects.find(key);
      if (it == objects.end()) return absl::NotFoundError(absl::StrCat(PluralOf(resource), " \"", key, "\" not found"));
      stored_copy = ReplaceLocked(resource, it->second, std::move(object));
    }
    NotifyWatchers();
    return stored_copy;
  }

  absl::StatusOr<json> Mutate(const std::string& ns, const std::string& name,
                              const std::function<void(json&)>& mutate) {
    json stored_copy;
    {
      std::lock_guard lock(mu);
      auto it = pods.find(PodKey(ns, name));
      if (it == pods.end()) return absl::NotFoundError(absl::StrCat("pods \"", ns, "/", name, "\" not found"));
      json object = it->second;
      mutate(object);
      stored_copy = ReplaceLocked(FakeResource::kPods, it->second, std::move(object));
    }
    NotifyWatchers();
    return stored_copy;
  }

  absl::Status Delete(FakeResource resource, const std::string& key) {
    {
      std::lock_guard lock(mu);
      auto& objects = Objects(resource);
      auto it = objects.find(key);
      if (it == objects.end()) return absl::NotFoundError(absl::StrCat(PluralOf(resource), " \"", key, "\" not found"));
      json object = std::move(it->second);
      objects.erase(it);
      object["metadata"]["resourceVersion"] = std::to_string(++rv);
      Emit(resource, "DELETED", object);
    }
    NotifyWatchers();
    return absl::OkStatus();
  }

  // --- request handlers (io thread) -------------------------------------------------

  Response Handle(const RecordedRequest& rec) {
    const Route route = ParseRoute(rec.path);
    try {
      switch (route.kind) {
        case Route::kList:
          if (rec.method == "GET") return List(rec, route);
          break;
        case Route::kGet:
          if (rec.method == "GET") return Get(route);
          if (rec.method == "PATCH") return Patch(rec, route);
          break;
        case Route::kBinding:
        case Route::kBindings:
          if (rec.method == "POST") return Bind(rec, route);
          break;
        case Route::kEviction:
          if (rec.method == "POST") return Evict(rec, route);
          break;
        case Route::kPodStatus:
          if (rec.method == "GET") return Get(route);
          if (rec.method == "PATCH") return Patch(rec, route, /*status_only=*/true);
          break;
        case Route::kUnknown:
          return StatusResponse(404, "the server could not find the requested resource");
      }
      return StatusResponse(405, "the server does not allow this method on the requested resource");
    } catch (const std::exception& e) {
      // nlohmann throws on type mismatches inside odd request bodies.
      return StatusResponse(500, absl::StrCat("fake API server: ", e.what()));
    }
  }

  Response List(const RecordedRequest& rec, const Route& route) {
    int64_t limit = 0;
    if (const std::string l = QueryParam(rec, "limit"); !l.empty() && !absl::SimpleAtoi(l, &limit)) {
      return StatusResponse(400, absl::StrCat("invalid limit \"", l, "\""));
    }
    const std::vector<FieldRequirement> selector = ParseFieldSelector(QueryParam(rec, "fieldSelector"));
    std::lock_guard lock(mu);
    int64_t list_rv = rv;
    std::string start;
    if (const std::string token = QueryParam(rec, "continue"); !token.empty()) {
      std::string decoded;
      json parsed;
      if (absl::WebSafeBase64Unescape(token, &decoded)) parsed = json::parse(decoded, nullptr, false);
      if (!parsed.is_object() || !parsed["rv"].is_number_integer() || !parsed["start"].is_string()) {
        return StatusResponse(
            400, "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
      }
      list_rv = parsed["rv"].get<int64_t>();
      start = parsed["start"].get<std::string>();
      if (list_rv < compacted_rv) {
        return StatusResponse(410,
                              "The provided continue parameter is too old to display a consistent list result. You "
                              "can start a new list without the continue parameter, or use the continue token in "
                              "this response to retrieve the remainder of the results. Continuing with the provided "
                              "token results in an inconsistent list - objects that were created, modified, or "
                              "deleted between the time the first chunk was returned and now may show up in the list.");
      }
    }
    const auto& objects = Objects(route.resource);
    json items = json::array();
    std::string next;
    for (auto it = objects.lower_bound(start); it != objects.end(); ++it) {
      if (!InScope(it->second, route.ns, selector)) continue;
      if (limit > 0 && static_cast<int64_t>(items.size()) == limit) {
        // The real server encodes the last key plus "\x00"; the next key is equivalent.
        next = json{{"v", "meta.k8s.io/v1"}, {"rv", list_rv}, {"start", it->first}}.dump();
        break;
      }
      json item = it->second;
      item.erase("kind");
      item.erase("apiVersion");
      items.push_back(std::move(item));
    }
    json metadata = {{"resourceVersion", std::to_string(list_rv)}};
    if (!next.empty()) metadata["continue"] = absl::WebSafeBase64Escape(next);
    return JsonResponse(200, json{{"kind", absl::StrCat(KindOf(route.resource), "List")},
                                  {"apiVersion", "v1"},
                                  {"metadata", std::move(metadata)},
                                  {"items", std::move(items)}});
  }

  static Response NotFound(FakeResource resource, const std::string& name) {
    return StatusResponse(404, absl::StrCat(PluralOf(resource), " \"", name, "\" not found"));
  }

  Response Get(const Route& route) {
    std::lock_guard lock(mu);
    const auto& objects = Objects(route.resource);
    auto it = objects.find(route.resource == FakeResource::kNodes ? route.name : PodKey(route.ns, route.name));
    if (it == objects.end()) return NotFound(route.resource, route.name);
    return JsonResponse(200, it->second);
  }

  // `status_only`: the pod's status subresource, where the API server keeps
  // the stored spec whatever the patch says (podStatusStrategy).
  Response Patch(const RecordedRequest& rec, const Route& route, bool status_only = false) {
    auto ct = rec.headers.find("content-type");
    const std::string content_type =
        ct == rec.headers.end() ? ""
                                : std::string(absl::StripAsciiWhitespace(ct->second.substr(0, ct->second.find(';'))));
    const bool json_patch = content_type == "application/json-patch+json";
    if (!json_patch && content_type != "application/merge-patch+json" &&
        content_type != "application/strategic-merge-patch+json") {
      return StatusResponse(415, absl::StrCat("the body of the request was in an unknown format - accepted media types "
                                              "include: application/json-patch+json, application/merge-patch+json, "
                                              "application/strategic-merge-patch+json (got \"",
                                              content_type, "\")"));
    }
    const json patch = json::parse(rec.body, nullptr, false);
    if (patch.is_discarded() || (json_patch ? !patch.is_array() : !patch.is_object())) {
      return StatusResponse(400, "the request body is not a valid patch document");
    }
    json updated;
    {
      std::lock_guard lock(mu);
      auto& objects = Objects(route.resource);
      auto it = objects.find(route.resource == FakeResource::kNodes ? route.name : PodKey(route.ns, route.name));
      if (it == objects.end()) return NotFound(route.resource, route.name);
      json& stored = it->second;
      if (!json_patch && patch.contains("metadata") && patch["metadata"].is_object()) {
        const json& meta = patch["metadata"];
        const std::string stored_uid = StringAt(stored, {"metadata", "uid"});
        if (meta.contains("uid") && meta["uid"] != stored_uid) {
          // kube-apiserver v1.26 validates the patched object, whose uid
          // differs: 422, not a 409 precondition failure
          // (test/control_plane/eviction_test.cc).
          const std::string uid = meta["uid"].is_string() ? meta["uid"].get<std::string>() : meta["uid"].dump();
          return UidImmutable(route.resource, route.name, uid);
        }
        if (meta.contains("resourceVersion") && meta["resourceVersion"] != stored["metadata"]["resourceVersion"]) {
          return StatusResponse(409, ConflictMessage(route.name));
        }
      }
      json patched = stored;
      if (json_patch) {
        try {
          patched = stored.patch(patch);
        } catch (const std::exception& e) {
          return StatusResponse(422, absl::StrCat("the json patch cannot be applied: ", e.what()));
        }
      } else {
        patched.merge_patch(patch);
      }
      if (status_only) patched["spec"] = stored.value("spec", json::object());
      updated = ReplaceLocked(route.resource, stored, std::move(patched));
    }
    NotifyWatchers();
    return JsonResponse(200, updated);
  }

  // The 422 Invalid the real server answers for a patch whose metadata.uid is
  // not the stored object's.
  static Response UidImmutable(FakeResource resource, const std::string& name, const std::string& uid) {
    const std::string invalid = absl::StrCat("Invalid value: \"", uid, "\": field is immutable");
    json status = StatusObject(422, absl::StrCat(KindOf(resource), " \"", name, "\" is invalid: metadata.uid: ", invalid));
    status["details"] = {{"name", name},
                         {"kind", KindOf(resource)},
                         {"causes", json::array({{{"reason", "FieldValueInvalid"},
                                                  {"message", invalid},
                                                  {"field", "metadata.uid"}}})}};
    return JsonResponse(422, status);
  }

  static std::string ConflictMessage(const std::string& name) {
    return absl::StrCat(
        "Operation cannot be fulfilled on pods \"", name,
        "\": the object has been modified; please apply your changes to the latest version and try again");
  }

  Response Bind(const RecordedRequest& rec, const Route& route) {
    const json binding = json::parse(rec.body, nullptr, false);
    if (!binding.is_object()) return StatusResponse(400, "the request body is not a Binding object");
    const std::string body_name = StringAt(binding, {"metadata", "name"});
    const std::string name = route.kind == Route::kBinding ? route.name : body_name;
    if (name.empty()) return StatusResponse(400, "Binding: metadata.name is required");
    if (route.kind == Route::kBinding && !body_name.empty() && body_name != name) {
      return StatusResponse(400, "name in URL does not match name in Binding object");
    }
    const std::string target_kind = StringAt(binding, {"target", "kind"});
    const std::string node = StringAt(binding, {"target", "name"});
    if (node.empty()) return StatusResponse(422, "Binding: target.name is required");
    if (!target_kind.empty() && target_kind != "Node") {
      return StatusResponse(422, absl::StrCat("Binding: target.kind must be Node, not \"", target_kind, "\""));
    }
    {
      std::lock_guard lock(mu);
      auto it = pods.find(PodKey(route.ns, name));
      if (it == pods.end()) return NotFound(FakeResource::kPods, name);
      json& stored = it->second;
      const std::string uid = StringAt(binding, {"metadata", "uid"});
      const std::string stored_uid = StringAt(stored, {"metadata", "uid"});
      if (!uid.empty() && uid != stored_uid) {
        return StatusResponse(409, absl::StrCat("Operation cannot be fulfilled on pods/binding \"", name,
                                                "\": Precondition failed: UID in precondition: ", uid,
                                                ", UID in object meta: ", stored_uid));
      }
      if (const std::string bound = StringAt(stored, {"spec", "nodeName"}); !bound.empty()) {
        return StatusResponse(409, absl::StrCat("Operation cannot be fulfilled on pods/binding \"", name, "\": pod ",
                                                name, " is already assigned to node \"", bound, "\""));
      }
      json object = stored;
      object["spec"]["nodeName"] = node;
      // The API server copies the Binding's annotations onto the pod in the
      // same write (pkg/registry/core/pod/storage: setPodHostAndAnnotations).
      if (const json* annotations = binding.contains("metadata") ? &binding["metadata"] : nullptr;
          annotations != nullptr && annotations->contains("annotations") && (*annotations)["annotations"].is_object()) {
        for (const auto& [key, value] : (*annotations)["annotations"].items()) {
          object["metadata"]["annotations"][key] = value;
        }
      }
      json& conditions = object["status"]["conditions"];
      if (!conditions.is_array()) conditions = json::array();
      json kept = json::array();
      for (const json& c : conditions) {
        if (!c.is_object() || c.value("type", "") != "PodScheduled") kept.push_back(c);
      }
      conditions = std::move(kept);
      conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", Rfc3339Now()}});
      ReplaceLocked(FakeResource::kPods, stored, std::move(object));
    }
    NotifyWatchers();
    json success = {
        {"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}, {"code", 201}};
    return JsonResponse(201, success);
  }

  // POST pods/{name}/eviction, as kube-apiserver v1.26 answers it
  // (pkg/registry/core/pod/storage/eviction.go; test/control_plane/eviction_test.cc).
  Response Evict(const RecordedRequest& rec, const Route& route) {
    const json eviction = json::parse(rec.body, nullptr, false);
    if (!eviction.is_object()) return StatusResponse(400, "the request body is not an Eviction object");
    if (StringAt(eviction, {"metadata", "name"}) != route.name) {
      return StatusResponse(400, "name in URL does not match name in Eviction object");
    }
    {
      std::lock_guard lock(mu);
      auto it = pods.find(PodKey(route.ns, route.name));
      if (it == pods.end()) return NotFound(FakeResource::kPods, route.name);
      // A budget guards only a running pod that is not being deleted already.
      const std::string phase = StringAt(it->second, {"status", "phase"});
      const bool deleting = it->second["metadata"].contains("deletionTimestamp");
      if (auto budget = eviction_budgets.find(it->first);
          budget != eviction_budgets.end() && phase == "Running" && !deleting) {
        return DisruptionBudgetRefusal(budget->second);
      }
      const std::string uid = StringAt(eviction, {"deleteOptions", "preconditions", "uid"});
      const std::string stored_uid = StringAt(it->second, {"metadata", "uid"});
      if (!uid.empty() && uid != stored_uid) {
        return StatusResponse(409, absl::StrCat("Operation cannot be fulfilled on Pod \"", route.name,
                                                "\": the UID in the precondition (", uid,
                                                ") does not match the UID in record (", stored_uid,
                                                "). The object might have been deleted and then recreated"));
      }
      EvictLocked(it);
    }
    NotifyWatchers();
    json success = {
        {"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}, {"code", 201}};
    return JsonResponse(201, success);
  }

  static Response DisruptionBudgetRefusal(const std::string& budget) {
    json status = StatusObject(429, "Cannot evict pod as it would violate the pod's disruption budget.");
    status["details"] = {
        {"causes", json::array({{{"reason", "DisruptionBudget"},
                                 {"message", absl::StrCat("The disruption budget ", budget,
                                                          " needs 1 healthy pods and has 1 currently")}}})}};
    return JsonResponse(429, status);
  }

  // The writes an accepted eviction makes, each its own event: the
  // DisruptionTarget condition, then the deletion. A pod that is bound and not
  // finished, with a grace period (30 s unless its spec says), is only marked
  // (deletionTimestamp) and stays until its kubelet would delete it
  // (DeletePod()); any other pod goes at once. Callers hold mu.
  void EvictLocked(std::map<std::string, json>::iterator it) {
    json object = it->second;
    json& conditions = object["status"]["conditions"];
    if (!conditions.is_array()) conditions = json::array();
    const bool marked = std::any_of(conditions.begin(), conditions.end(), [](const json& c) {
      return c.is_object() && c.value("type", "") == "DisruptionTarget";
    });
    if (!marked) {
      conditions.push_back({{"type", "DisruptionTarget"},
                            {"status", "True"},
                            {"reason", "EvictionByEvictionAPI"},
                            {"message", "Eviction API: evicting"},
                            {"lastTransitionTime", Rfc3339Now()}});
      ReplaceLocked(FakeResource::kPods, it->second, std::move(object));
    }
    // Evicting a pod already being deleted changes nothing more.
    if (it->second["metadata"].contains("deletionTimestamp")) return;
    const std::string phase = StringAt(it->second, {"status", "phase"});
    const json& grace_field = it->second["spec"]["terminationGracePeriodSeconds"];
    int64_t grace = grace_field.is_number_integer() ? grace_field.get<int64_t>() : 30;
    if (StringAt(it->second, {"spec", "nodeName"}).empty() || phase == "Succeeded" || phase == "Failed") grace = 0;
    object = it->second;
    object["metadata"]["deletionTimestamp"] = Rfc3339Now(std::chrono::seconds(grace));
    object["metadata"]["deletionGracePeriodSeconds"] = grace;
    ReplaceLocked(FakeResource::kPods, it->second, std::move(object));
    if (grace > 0) return;
    json deleted = std::move(it->second);
    pods.erase(it);
    deleted["metadata"]["resourceVersion"] = std::to_string(++rv);
    Emit(FakeResource::kPods, "DELETED", deleted);
  }

  // --- state --------------------------------------------------------------------

  const FakeApiServerOptions options;
  absl::Status init_error;
  TlsTestCerts certs;
  ssl::context tls{ssl::context::tls_server};
  std::optional<TlsTestCertFiles> cert_files;  // guarded by mu

  // Lifecycle (guarded by lifecycle_mu): the io context, its thread, the listener.
  mutable std::mutex lifecycle_mu;
  std::unique_ptr<net::io_context> io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;
  std::atomic<uint16_t> bound_port{0};
  // The io context NotifyWatchers posts to (null while stopped).
  std::mutex notify_mu;
  net::io_context* notify_io = nullptr;
  std::atomic<bool> wake_pending{false};

  // io thread only.
  std::vector<std::weak_ptr<Connection>> connections;
  std::vector<std::shared_ptr<WatchStream>> watches;
  std::array<std::vector<std::string>, kResourceCount> pending_malformed;
  // RefuseNextWatchesAsTooLarge, per resource (guarded by mu).
  struct TooLargeRule {
    int remaining = 0;
    int retry_after_seconds = 1;
  };
  std::array<TooLargeRule, kResourceCount> too_large_watches;
  std::array<int, kResourceCount> malformed_watches{};  // MalformNextWatches, per resource (guarded by mu)
  std::vector<std::shared_ptr<Connection>> held;  // requests HoldNext holds
  std::atomic<int> held_count{0};
  std::mutex held_mu;                       // for WaitForHeldRequests to sleep on
  std::condition_variable held_changed;     // with held_mu: held_count changed

  void CountHeld(int delta) {
    {
      std::lock_guard lock(held_mu);
      held_count += delta;
    }
    held_changed.notify_all();
  }

  std::array<std::atomic<int>, kResourceCount> watch_connections{};
  std::atomic<int> accepted_connections{0};
  std::array<std::atomic<int>, kResourceCount> open_watches{};

  // The store, the log and the fault rules (guarded by mu).
  mutable std::mutex mu;
  std::string bearer_token;
  std::map<std::string, json> nodes;  // by name
  std::map<std::string, json> pods;   // by namespace/name
  std::vector<StoredEvent> history;   // ordered by rv
  int64_t rv = kFirstResourceVersion;
  int64_t compacted_rv = 0;  // watches from an RV below this expire
  std::mt19937_64 rng{std::random_device{}()};
  std::deque<RecordedRequest> log;
  size_t log_base = 0;  // index of log.front() among all requests ever logged
  std::list<FailRule> fail_rules;
  std::list<DelayRule> delay_rules;
  std::list<HoldRule> hold_rules;
  std::list<HoldRule> unanswered_rules;  // AnswerNothingNext
  std::map<std::string, std::string> eviction_budgets;  // pod key -> the budget refusing its eviction
};

// ============================================================================
// FakeApiServer
// ============================================================================

FakeApiServer::FakeApiServer(FakeApiServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

FakeApiServer::~FakeApiServer() { Stop(); }

absl::Status FakeApiServer::Start() { return impl_->Start(); }
void FakeApiServer::Stop() { impl_->Stop(); }
bool FakeApiServer::running() const { return impl_->running(); }
uint16_t FakeApiServer::port() const { return impl_->bound_port.load(); }
std::string FakeApiServer::url() const { return absl::StrCat("https://127.0.0.1:", port()); }
const TlsTestCerts& FakeApiServer::certs() const { return impl_->certs; }

absl::StatusOr<const TlsTestCertFiles*> FakeApiServer::cert_files() {
  std::lock_guard lock(impl_->mu);
  if (!impl_->cert_files.has_value()) {
    absl::StatusOr<TlsTestCertFiles> files = TlsTestCertFiles::Write(impl_->certs);
    if (!files.ok()) return files.status();
    impl_->cert_files.emplace(*std::move(files));
  }
  return &*impl_->cert_files;
}

absl::StatusOr<std::string> FakeApiServer::Kubeconfig(const KubeconfigOptions& options) {
  const TlsTestCertFiles* files = nullptr;
  if (!options.inline_data) {
    absl::StatusOr<const TlsTestCertFiles*> written = cert_files();
    if (!written.ok()) return written.status();
    files = *written;
  }
  const TlsTestCerts& pems = impl_->certs;
  std::string token;
  {
    std::lock_guard lock(impl_->mu);
    token = impl_->bearer_token;
  }
  std::string out = "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n";
  absl::StrAppend(&out, "    server: ", options.server.empty() ? url() : options.server, "\n");
  if (options.insecure_skip_tls_verify) {
    absl::StrAppend(&out, "    insecure-skip-tls-verify: true\n");
  } else if (files != nullptr) {
    absl::StrAppend(&out, "    certificate-authority: ", files->ca_cert(), "\n");
  } else {
    absl::StrAppend(&out, "    certificate-authority-data: ", absl::Base64Escape(pems.ca.cert_pem), "\n");
  }
  absl::StrAppend(&out, "users:\n- name: fake\n  user:\n");
  bool any_user_field = false;
  if (options.token && !token.empty()) {
    absl::StrAppend(&out, "    token: ", token, "\n");
    any_user_field = true;
  }
  if (options.client_cert) {
    if (files != nullptr) {
      absl::StrAppend(&out, "    client-certificate: ", files->client_cert(), "\n    client-key: ", files->client_key(),
                      "\n");
    } else {
      absl::StrAppend(&out, "    client-certificate-data: ", absl::Base64Escape(pems.client.cert_pem),
                      "\n    client-key-data: ", absl::Base64Escape(pems.client.key_pem), "\n");
    }
    any_user_field = true;
  }
  if (!any_user_field) {
    out.resize(out.size() - std::string_view("  user:\n").size());
    absl::StrAppend(&out, "  user: {}\n");
  }
  absl::StrAppend(&out,
                  "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\ncurrent-context: fake\n");
  return out;
}

absl::StatusOr<std::string> FakeApiServer::WriteKubeconfig(const KubeconfigOptions& options) {
  absl::StatusOr<std::string> text = Kubeconfig(options);
  if (!text.ok()) return text.status();
  absl::StatusOr<const TlsTestCertFiles*> files = cert_files();
  if (!files.ok()) return files.status();
  std::lock_guard lock(impl_->mu);
  return impl_->cert_files->WriteExtra("kubeconfig", *text);
}

void FakeApiServer::SetBearerToken(std::string token) {
  std::lock_guard lock(impl_->mu);
  impl_->bearer_token = std::move(token);
}

nlohmann::json FakeApiServer::MinimalNode(const std::string& name) {
  return json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
              {"spec", json::object()},
              {"status",
               {{"capacity", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
                {"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

nlohmann::json FakeApiServer::MinimalPod(const std::string& ns, const std::string& name) {
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"schedulerName", "tessera-scheduler"},
                {"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}},
              {"status", {{"phase", "Pending"}}}};
}

absl::StatusOr<nlohmann::json> FakeApiServer::AddNode(nlohmann::json node) {
  return impl_->Add(FakeResource::kNodes, std::move(node));
}
absl::StatusOr<nlohmann::json> FakeApiServer::UpdateNode(nlohmann::json node) {
  return impl_->Update(FakeResource::kNodes, std::move(node));
}
absl::Status FakeApiServer::DeleteNode(const std::string& name) { return impl_->Delete(FakeResource::kNodes, name); }
absl::StatusOr<nlohmann::json> FakeApiServer::AddPod(nlohmann::json pod) {
  return impl_->Add(FakeResource::kPods, std::move(pod));
}
absl::StatusOr<nlohmann::json> FakeApiServer::UpdatePod(nlohmann::json pod) {
  return impl_->Update(FakeResource::kPods, std::move(pod));
}
absl::StatusOr<nlohmann::json> FakeApiServer::MutatePod(const std::string& ns, const std::string& name,
                                                        const std::function<void(nlohmann::json&)>& mutate) {
  return impl_->Mutate(ns, name, mutate);
}
absl::Status FakeApiServer::SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase) {
  return impl_->Mutate(ns, name, [&](json& pod) { pod["status"]["phase"] = phase; }).status();
}
absl::Status FakeApiServer::DeletePod(const std::string& ns, const std::string& name) {
  return impl_->Delete(FakeResource::kPods, PodKey(ns, name));
}

std::optional<nlohmann::json> FakeApiServer::Node(const std::string& name) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->nodes.find(name);
  if (it == impl_->nodes.end()) return std::nullopt;
  return it->second;
}
std::optional<nlohmann::json> FakeApiServer::Pod(const std::string& ns, const std::string& name) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->pods.find(PodKey(ns, name));
  if (it == impl_->pods.end()) return std::nullopt;
  return it->second;
}
size_t FakeApiServer::NodeCount() const {
  std::lock_guard lock(impl_->mu);
  return impl_->nodes.size();
}
size_t FakeApiServer::PodCount() const {
  std::lock_guard lock(impl_->mu);
  return impl_->pods.size();
}
int64_t FakeApiServer::ResourceVersion() const {
  std::lock_guard lock(impl_->mu);
  return impl_->rv;
}

void FakeApiServer::CompactHistory() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->compacted_rv = impl_->rv;
    impl_->history.clear();
  }
  // Streams behind the compaction notice it when they wake.
  impl_->NotifyWatchers();
}

std::vector<RecordedRequest> FakeApiServer::Requests(std::string_view method, std::string_view path_prefix) const {
  std::lock_guard lock(impl_->mu);
  std::vector<RecordedRequest> out;
  for (const RecordedRequest& r : impl_->log) {
    if ((method.empty() || r.method == method) && r.path.starts_with(path_prefix)) out.push_back(r);
  }
  return out;
}

void FakeApiServer::ClearRequests() {
  std::lock_guard lock(impl_->mu);
  impl_->log_base += impl_->log.size();
  impl_->log.clear();
}

int FakeApiServer::WatchConnections(FakeResource resource) const {
  return impl_->watch_connections[Index(resource)].load();
}
int FakeApiServer::AcceptedConnections() const { return impl_->accepted_connections.load(); }

int FakeApiServer::OpenWatchStreams(FakeResource resource) const { return impl_->open_watches[Index(resource)].load(); }

void FakeApiServer::FailNext(const RequestMatch& match, int http_status, int count) {
  std::string message = http_status == 500   ? "Internal error occurred: injected by the fake API server"
                        : http_status == 503 ? "the server is currently unable to handle the request"
                        : http_status == 429 ? "Too many requests, please try again later."
                                             : absl::StrCat("injected failure ", http_status);
  std::lock_guard lock(impl_->mu);
  impl_->fail_rules.push_back(
      {.match = match, .also = nullptr, .status = http_status, .message = std::move(message), .remaining = count});
}

void FakeApiServer::DelayNext(const RequestMatch& match, std::chrono::milliseconds delay, int count) {
  std::lock_guard lock(impl_->mu);
  impl_->delay_rules.push_back({.match = match, .delay = delay, .remaining = count});
}

void FakeApiServer::AnswerNothingNext(const RequestMatch& match, int count) {
  std::lock_guard lock(impl_->mu);
  impl_->unanswered_rules.push_back({.match = match, .remaining = count});
}

void FakeApiServer::HoldNext(const RequestMatch& match, int count) {
  std::lock_guard lock(impl_->mu);
  impl_->hold_rules.push_back({.match = match, .remaining = count});
}

int FakeApiServer::HeldRequests() const { return impl_->held_count.load(); }

bool FakeApiServer::WaitForHeldRequests(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->held_mu);
  return impl_->held_changed.wait_for(lock, timeout, [this, n] { return impl_->held_count.load() >= n; });
}

void FakeApiServer::ReleaseHeld() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->hold_rules.clear();
  }
  impl_->RunOnIoIfRunning([this] {
    for (const std::shared_ptr<Impl::Connection>& c : impl_->held) {
      c->held = false;
      c->timer.cancel();
    }
    impl_->held.clear();
  });
}

void FakeApiServer::ConflictNextPatch(int count) {
  std::lock_guard lock(impl_->mu);
  impl_->fail_rules.push_back({.match = {"PATCH", "/api/v1/namespaces/"},
                               .also = [](const RecordedRequest& r) { return ParseRoute(r.path).kind == Route::kGet; },
                               .status = 409,
                               .message = "Operation cannot be fulfilled on pods: the object has been modified; please "
                                          "apply your changes to the latest version and try again",
                               .remaining = count});
}

void FakeApiServer::ConflictNextBinding(int count) {
  std::lock_guard lock(impl_->mu);
  impl_->fail_rules.push_back({.match = {"POST", "/api/v1/namespaces/"},
                               .also =
                                   [](const RecordedRequest& r) {
                                     const Route::Kind k = ParseRoute(r.path).kind;
                                     return k == Route::kBinding || k == Route::kBindings;
                                   },
                               .status = 409,
                               .message = "Operation cannot be fulfilled on pods/binding: the object has been modified",
                               .remaining = count});
}

void FakeApiServer::RefuseEvictions(const std::string& ns, const std::string& name, const std::string& budget) {
  std::lock_guard lock(impl_->mu);
  impl_->eviction_budgets[PodKey(ns, name)] = budget;
}

void FakeApiServer::AllowEvictions(const std::string& ns, const std::string& name) {
  std::lock_guard lock(impl_->mu);
  impl_->eviction_budgets.erase(PodKey(ns, name));
}

void FakeApiServer::DropWatchStreamsAfter(FakeResource resource, int events) {
  impl_->RunOnIoIfRunning([this, resource, events] {
    for (const auto& w : impl_->watches) {
      if (w->resource != resource) continue;
      w->drop_after = std::max(events, 0);
      w->connection->timer.cancel();
    }
  });
}

void FakeApiServer::DropAllWatches() {
  impl_->RunOnIoIfRunning([this] {
    for (const auto& w : impl_->watches) w->connection->Close();
  });
}

void FakeApiServer::InjectMalformedEvent(FakeResource resource, MalformedEvent kind) {
  std::string line;
  switch (kind) {
    case MalformedEvent::kNotJson:
      line = std::string(kTruncatedEvent);
      break;
    case MalformedEvent::kMissingObject:
      line = R"({"type":"MODIFIED"})";
      break;
    case MalformedEvent::kUnknownType: {
      json object = resource == FakeResource::kNodes ? MinimalNode("malformed-event-node")
                                                     : MinimalPod("default", "malformed-event-pod");
      object["metadata"]["resourceVersion"] = std::to_string(ResourceVersion());
      line = json{{"type", "EXPLODED"}, {"object", object}}.dump();
      break;
    }
  }
  line.push_back('\n');
  const int r = Index(resource);
  std::lock_guard lifecycle(impl_->lifecycle_mu);
  if (impl_->io == nullptr) {
    // Stopped: nothing runs on the io side, so queue for the next stream directly.
    impl_->pending_malformed[r].push_back(std::move(line));
    return;
  }
  impl_->RunOnIo([&] {
    bool delivered = false;
    for (const auto& w : impl_->watches) {
      if (w->resource != resource) continue;
      w->raw_lines.push_back(line);
      w->connection->timer.cancel();
      delivered = true;
    }
    if (!delivered) impl_->pending_malformed[r].push_back(line);
  });
}

void FakeApiServer::ExpireWatches(FakeResource resource) {
  impl_->RunOnIoIfRunning([this, resource] {
    for (const auto& w : impl_->watches) {
      if (w->resource != resource) continue;
      w->expire = true;
      w->connection->timer.cancel();
    }
  });
}

void FakeApiServer::SendBookmarks() {
  impl_->RunOnIoIfRunning([this] {
    for (const auto& w : impl_->watches) {
      if (!w->bookmarks) continue;
      w->bookmark_now = true;
      w->connection->timer.cancel();
    }
  });
}

void FakeApiServer::MalformNextWatches(FakeResource resource, int count) {
  std::lock_guard lock(impl_->mu);
  impl_->malformed_watches[Index(resource)] = count;
}

void FakeApiServer::RefuseNextWatchesAsTooLarge(FakeResource resource, int count, int retry_after_seconds) {
  std::lock_guard lock(impl_->mu);
  impl_->too_large_watches[Index(resource)] = {.remaining = count, .retry_after_seconds = retry_after_seconds};
}

}  // namespace tessera::testing
