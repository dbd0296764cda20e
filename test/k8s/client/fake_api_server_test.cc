// Self-test of the fake Kubernetes API server, driven by a plain Beast/Asio
// TLS client that trusts only the generated CA: what the real API client will
// meet (pagination, watch replay, bookmarks, 410, preconditions, bindings,
// auth, injected faults) behaves as documented in fake_api_server.h.
#include "test/testing/fake_api_server.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/eventually.h"

namespace tessera::testing {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kWait = std::chrono::seconds(10);

// --- a minimal blocking HTTPS client ---------------------------------------------

struct Answer {
  int status = 0;  ///< 0: no HTTP answer (connection or TLS failure).
  std::string body;
  std::string retry_after;
  std::string error;

  [[nodiscard]] json Json() const { return json::parse(body, nullptr, false); }
};

struct ClientOptions {
  std::string ca_pem;                       ///< The only CA trusted.
  const PemKeyPair* client_cert = nullptr;  ///< Presented when set.
  std::string token;                        ///< Sent as a bearer token when set.
};

/// One keep-alive TLS connection to 127.0.0.1:port that verifies the server
/// certificate against the given CA and the name 127.0.0.1.
class TlsClient {
 public:
  TlsClient(uint16_t port, ClientOptions options)
      : options_(std::move(options)), tls_(MakeContext(options_)), stream_(io_, tls_) {
    boost::system::error_code ec;
    stream_.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
    stream_.lowest_layer().connect({net::ip::make_address("127.0.0.1"), port}, ec);
    if (!ec) stream_.handshake(ssl::stream_base::client, ec);
    connect_error_ = ec;
  }

  [[nodiscard]] const boost::system::error_code& connect_error() const { return connect_error_; }

  /// Writes a request (no response read).
  bool Write(http::verb method, const std::string& target, const std::string& body = "",
             const std::string& content_type = "") {
    if (connect_error_) return false;
    http::request<http::string_body> req(method, target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::user_agent, "fake-api-server-test");
    if (!options_.token.empty()) req.set(http::field::authorization, "Bearer " + options_.token);
    if (!content_type.empty()) req.set(http::field::content_type, content_type);
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    boost::system::error_code ec;
    http::write(stream_, req, ec);
    return !ec;
  }

  Answer Send(http::verb method, const std::string& target, const std::string& body = "",
              const std::string& content_type = "") {
    Answer answer;
    if (connect_error_) {
      answer.error = connect_error_.message();
      return answer;
    }
    if (!Write(method, target, body, content_type)) {
      answer.error = "write failed";
      return answer;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(size_t{1} << 30);
    boost::system::error_code ec;
    http::read(stream_, buffer_, parser, ec);
    if (ec) {
      answer.error = ec.message();
      return answer;
    }
    answer.status = parser.get().result_int();
    answer.body = parser.get().body();
    answer.retry_after = std::string(parser.get()[http::field::retry_after]);
    return answer;
  }

  Answer Get(const std::string& target) { return Send(http::verb::get, target); }

  /// The connection, for reading a streamed answer (see Watch).
  ssl::stream<net::ip::tcp::socket>& stream() { return stream_; }
  beast::flat_buffer& buffer() { return buffer_; }

 private:
  static ssl::context MakeContext(const ClientOptions& options) {
    ssl::context tls(ssl::context::tls_client);
    boost::system::error_code ec;
    tls.add_certificate_authority(net::buffer(options.ca_pem), ec);
    EXPECT_FALSE(ec) << ec.message();
    tls.set_verify_mode(ssl::verify_peer);
    if (options.client_cert != nullptr) {
      tls.use_certificate_chain(net::buffer(options.client_cert->cert_pem));
      tls.use_private_key(net::buffer(options.client_cert->key_pem), ssl::context::pem);
    }
    return tls;
  }

  ClientOptions options_;
  net::io_context io_;
  ssl::context tls_;
  ssl::stream<net::ip::tcp::socket> stream_;
  beast::flat_buffer buffer_;
  boost::system::error_code connect_error_;
};

/// A watch request read on its own thread; lines are collected as they come,
/// and the waits below are woken as they do (no polling: a test that counts
/// what arrived by a moment sees that moment, not the next poll's).
class Watch {
 public:
  Watch(uint16_t port, ClientOptions options, std::string target)
      : client_(port, std::move(options)), reader_([this, target = std::move(target)] { Read(target); }) {}

  ~Watch() {
    // Unblock a reader still waiting for data; the fd stays open until join.
    if (!ended_) ::shutdown(client_.stream().lowest_layer().native_handle(), SHUT_RDWR);
    reader_.join();
  }

  /// Waits until at least `n` lines arrived; returns a copy of all of them.
  std::vector<std::string> WaitForLines(size_t n) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, kWait, [&] { return lines_.size() >= n || ended_; });
    return lines_;
  }
  std::vector<json> WaitForEvents(size_t n) {
    std::vector<json> events;
    for (const std::string& line : WaitForLines(n)) events.push_back(json::parse(line, nullptr, false));
    return events;
  }
  /// Waits for the stream to end. \return whether it ended.
  bool WaitForEnd() {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kWait, [&] { return ended_.load(); });
  }
  bool ended() const { return ended_; }

  std::vector<std::string> Lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  size_t LineCount() const {
    std::lock_guard lock(mu_);
    return lines_.size();
  }
  /// The response status, once its header arrived (0 when it never did).
  int status() const {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, kWait, [&] { return status_ != 0 || ended_; });
    return status_;
  }
  /// The stream ended with its final chunk (not cut).
  bool ended_cleanly() const { return clean_end_; }
  std::string body_rest() const {
    std::lock_guard lock(mu_);
    return rest_;
  }

 private:
  void Read(const std::string& target) {
    if (!client_.Write(http::verb::get, target)) {
      ended_ = true;
      Changed();
      return;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(size_t{1} << 30);
    boost::system::error_code ec;
    http::read_header(client_.stream(), client_.buffer(), parser, ec);
    if (!ec) status_ = parser.get().result_int();
    Changed();
    while (!ec && !parser.is_done()) {
      http::read_some(client_.stream(), client_.buffer(), parser, ec);
      TakeLines(parser.get().body());
    }
    {
      std::lock_guard lock(mu_);
      rest_ = parser.get().body();
    }
    clean_end_ = !ec && parser.is_done();
    ended_ = true;
    Changed();
  }

  // Wakes the waits. Taking mu_ first orders the change before a waiter's
  // check of it: none misses it between checking and sleeping.
  void Changed() {
    { std::lock_guard lock(mu_); }
    changed_.notify_all();
  }

  void TakeLines(std::string& body) {
    std::lock_guard lock(mu_);
    size_t end;
    while ((end = body.find('\n')) != std::string::npos) {
      lines_.push_back(body.substr(0, end));
      body.erase(0, end + 1);
    }
    changed_.notify_all();
  }

  TlsClient client_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // with mu_: a line, the status or the end came
  std::vector<std::string> lines_;
  std::string rest_;
  std::atomic<int> status_{0};
  std::atomic<bool> clean_end_{false};
  std::atomic<bool> ended_{false};
  std::thread reader_;
};

// --- fixture ---------------------------------------------------------------------------

std::vector<std::string> Names(const json& list) {
  std::vector<std::string> names;
  for (const json& item : list["items"]) names.push_back(item["metadata"]["name"].get<std::string>());
  return names;
}

std::vector<std::string> Types(const std::vector<json>& events) {
  std::vector<std::string> types;
  for (const json& e : events) types.push_back(e.value("type", "<none>"));
  return types;
}

/// Options with periodic bookmarks off (tests ask for them with SendBookmarks).
FakeApiServerOptions Quiet() {
  FakeApiServerOptions options;
  options.bookmark_interval = std::chrono::milliseconds(0);
  return options;
}

FakeApiServerOptions WithToken(std::string token) {
  FakeApiServerOptions options = Quiet();
  options.bearer_token = std::move(token);
  return options;
}

TlsTestCertOptions OtherCa() {
  TlsTestCertOptions options;
  options.ca_common_name = "another-ca";
  return options;
}

class FakeApiServerTest : public ::testing::Test {
 protected:
  void StartServer(FakeApiServerOptions options = Quiet()) {
    server_ = std::make_unique<FakeApiServer>(std::move(options));
    const absl::Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }
  void SetUp() override { StartServer(); }

  ClientOptions Trusting() const {
    ClientOptions options;
    options.ca_pem = server_->certs().ca.cert_pem;
    return options;
  }
  TlsClient Client() const { return TlsClient(server_->port(), Trusting()); }
  std::unique_ptr<Watch> OpenWatch(const std::string& target, FakeResource resource = FakeResource::kPods) {
    const int before = server_->WatchConnections(resource);
    auto watch = std::make_unique<Watch>(server_->port(), Trusting(), target);
    EXPECT_TRUE(WaitFor([&] { return server_->WatchConnections(resource) > before || watch->ended(); }))
        << "the watch " << target << " never opened";
    return watch;
  }

  json AddPod(const std::string& ns, const std::string& name) {
    absl::StatusOr<json> pod = server_->AddPod(FakeApiServer::MinimalPod(ns, name));
    EXPECT_TRUE(pod.ok()) << pod.status();
    return pod.ok() ? *pod : json();
  }

  std::unique_ptr<FakeApiServer> server_;
};

// --- lists ---------------------------------------------------------------------------------

TEST_F(FakeApiServerTest, PaginatedListWalksEveryItemOnceInKeyOrderAtTheFirstPagesVersion) {
  for (const char* name : {"p3", "p1", "p5", "p2", "p4"}) AddPod("default", name);
  AddPod("kube-system", "p0");
  const std::string first_rv = std::to_string(server_->ResourceVersion());
  TlsClient client = Client();

  std::vector<std::string> walked;
  std::string target = "/api/v1/pods?limit=2";
  int pages = 0;
  for (; pages < 10; ++pages) {
    const Answer page = client.Get(target);
    ASSERT_EQ(page.status, 200) << page.body;
    const json list = page.Json();
    EXPECT_EQ(list["kind"], "PodList");
    EXPECT_EQ(list["metadata"]["resourceVersion"], first_rv);
    for (const json& item : list["items"]) EXPECT_FALSE(item.contains("kind")) << "list items omit kind";
    for (const std::string& name : Names(list)) walked.push_back(name);
    if (pages == 0) AddPod("zzz", "created-during-the-walk");  // pages after the first read the live store
    const std::string next = list["metadata"].value("continue", "");
    if (next.empty()) break;
    target = absl::StrCat("/api/v1/pods?limit=2&continue=", next);
  }
  EXPECT_THAT(walked, ElementsAre("p1", "p2", "p3", "p4", "p5", "p0", "created-during-the-walk"));
  EXPECT_EQ(pages, 3);
}

TEST_F(FakeApiServerTest, NamespacedAndSelectedListsKeepOnlyTheirPods) {
  AddPod("a", "p1");
  AddPod("b", "p2");
  ASSERT_TRUE(server_->SetPodPhase("b", "p2", "Succeeded").ok());
  TlsClient client = Client();
  EXPECT_THAT(Names(client.Get("/api/v1/namespaces/a/pods").Json()), ElementsAre("p1"));
  EXPECT_THAT(Names(client.Get("/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded").Json()), ElementsAre("p1"));
  EXPECT_THAT(Names(client.Get("/api/v1/pods?fieldSelector=spec.nodeName%3D,unknown.field%3Dx").Json()),
              ElementsAre("p1", "p2"));
  EXPECT_EQ(server_->Requests("GET").back().query.at("fieldSelector"), "spec.nodeName=,unknown.field=x");
}

TEST_F(FakeApiServerTest, ContinueTokenFromBeforeACompactionIsExpired) {
  for (const char* name : {"p1", "p2", "p3"}) AddPod("default", name);
  TlsClient client = Client();
  const json first = client.Get("/api/v1/pods?limit=1").Json();
  ASSERT_TRUE(first["metadata"].contains("continue"));
  ASSERT_TRUE(server_->SetPodPhase("default", "p1", "Running").ok());
  server_->CompactHistory();

  const Answer next =
      client.Get(absl::StrCat("/api/v1/pods?limit=1&continue=", first["metadata"]["continue"].get<std::string>()));
  EXPECT_EQ(next.status, 410);
  EXPECT_EQ(next.Json()["kind"], "Status");
  EXPECT_EQ(next.Json()["reason"], "Expired");
  EXPECT_EQ(next.Json()["code"], 410);
}

TEST_F(FakeApiServerTest, GetReturnsTheObjectOrANotFoundStatus) {
  AddPod("default", "p1");
  ASSERT_TRUE(server_->AddNode(FakeApiServer::MinimalNode("n1")).ok());
  TlsClient client = Client();
  EXPECT_EQ(client.Get("/api/v1/namespaces/default/pods/p1").Json()["kind"], "Pod");
  EXPECT_EQ(client.Get("/api/v1/nodes/n1").Json()["metadata"]["name"], "n1");
  const Answer missing = client.Get("/api/v1/namespaces/default/pods/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.Json()["reason"], "NotFound");
  EXPECT_EQ(client.Get("/apis/apps/v1/deployments").status, 404);
}

// --- watches ----------------------------------------------------------------------------

TEST_F(FakeApiServerTest, WatchReplaysHistoryAfterItsVersionThenLiveEventsAndBookmarks) {
  AddPod("default", "before");
  const int64_t from = server_->ResourceVersion();
  AddPod("default", "replayed");
  ASSERT_TRUE(server_->SetPodPhase("default", "replayed", "Running").ok());
  ASSERT_TRUE(server_->AddNode(FakeApiServer::MinimalNode("n1")).ok());  // other resource: not in a pod watch

  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", from, "&allowWatchBookmarks=true"));
  EXPECT_EQ(watch->status(), 200);
  ASSERT_EQ(watch->WaitForLines(2).size(), 2u);
  ASSERT_TRUE(server_->DeletePod("default", "replayed").ok());
  AddPod("default", "live");
  ASSERT_EQ(watch->WaitForLines(4).size(), 4u);
  server_->SendBookmarks();

  const std::vector<json> events = watch->WaitForEvents(5);
  EXPECT_THAT(Types(events), ElementsAre("ADDED", "MODIFIED", "DELETED", "ADDED", "BOOKMARK"));
  EXPECT_EQ(events[1]["object"]["status"]["phase"], "Running");
  EXPECT_EQ(events[3]["object"]["metadata"]["name"], "live");
  EXPECT_EQ(events[3]["object"]["kind"], "Pod");
  int64_t last_rv = from;
  for (size_t i = 0; i < 4; ++i) {
    const int64_t rv = std::stoll(events[i]["object"]["metadata"]["resourceVersion"].get<std::string>());
    EXPECT_GT(rv, last_rv) << events[i].dump();
    last_rv = rv;
  }
  EXPECT_EQ(events[4]["object"]["metadata"]["resourceVersion"], std::to_string(server_->ResourceVersion()));
  EXPECT_EQ(events[4]["object"]["metadata"].size(), 1u) << "a bookmark carries only its resourceVersion";
}

TEST_F(FakeApiServerTest, WatchWithoutVersionStartsWithTheCurrentStateAsAdded) {
  AddPod("default", "p1");
  AddPod("other", "p2");
  auto watch = OpenWatch("/api/v1/namespaces/default/pods?watch=true");
  AddPod("default", "p3");
  AddPod("other", "p4");
  AddPod("default", "p5");
  const std::vector<json> events = watch->WaitForEvents(3);
  ASSERT_THAT(Types(events), ElementsAre("ADDED", "ADDED", "ADDED"));
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "p1");
  EXPECT_EQ(events[1]["object"]["metadata"]["name"], "p3");
  EXPECT_EQ(events[2]["object"]["metadata"]["name"], "p5");
}

TEST_F(FakeApiServerTest, SelectedWatchSeesObjectsEnterAndLeaveTheSelection) {
  AddPod("default", "p1");
  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&resourceVersion=",
                                      server_->ResourceVersion()));
  TlsClient client = Client();
  ASSERT_EQ(
      client
          .Send(http::verb::post, "/api/v1/namespaces/default/pods/p1/binding",
                R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},"target":{"kind":"Node","name":"n1"}})",
                "application/json")
          .status,
      201);
  ASSERT_TRUE(server_->MutatePod("default", "p1", [](json& pod) { pod["spec"]["nodeName"] = "n2"; }).ok());
  EXPECT_THAT(Types(watch->WaitForEvents(2)), ElementsAre("ADDED", "DELETED"));
}

TEST_F(FakeApiServerTest, PeriodicBookmarksArriveOnlyWhenAllowed) {
  FakeApiServerOptions options;
  options.bookmark_interval = std::chrono::milliseconds(20);
  StartServer(options);
  auto quiet = OpenWatch(absl::StrCat("/api/v1/nodes?watch=1&resourceVersion=", server_->ResourceVersion()),
                         FakeResource::kNodes);
  auto watch = OpenWatch(
      absl::StrCat("/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=", server_->ResourceVersion()),
      FakeResource::kNodes);
  const std::vector<json> events = watch->WaitForEvents(2);
  EXPECT_THAT(Types(events), ElementsAre("BOOKMARK", "BOOKMARK"));
  EXPECT_EQ(events[0]["object"]["kind"], "Node");
  EXPECT_EQ(quiet->LineCount(), 0u);
}

TEST_F(FakeApiServerTest, WatchEndsCleanlyAtItsTimeoutAndTheConnectionStaysUsable) {
  auto watch = OpenWatch("/api/v1/pods?watch=1&timeoutSeconds=1&resourceVersion=0");
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_TRUE(watch->ended_cleanly());
  EXPECT_EQ(watch->LineCount(), 0u);
  // The server forgets the stream just after the client has seen its end.
  EXPECT_TRUE(WaitFor([&] { return server_->OpenWatchStreams(FakeResource::kPods) == 0; }));
}

struct ExpiredCase {
  std::string name;
  ExpiredWatchAnswer answer;
};

void PrintTo(const ExpiredCase& c, std::ostream* os) { *os << c.name; }

class ExpiredWatchTest : public FakeApiServerTest, public ::testing::WithParamInterface<ExpiredCase> {};

TEST_P(ExpiredWatchTest, WatchFromACompactedVersionIsGone) {
  FakeApiServerOptions options = Quiet();
  options.expired_watch_answer = GetParam().answer;
  StartServer(options);
  AddPod("default", "p1");
  const int64_t old = server_->ResourceVersion();
  AddPod("default", "p2");
  server_->CompactHistory();
  Watch watch(server_->port(), Trusting(), absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", old));
  ASSERT_TRUE(watch.WaitForEnd());
  if (GetParam().answer == ExpiredWatchAnswer::kHttp410) {
    EXPECT_EQ(watch.status(), 410);
    EXPECT_EQ(json::parse(watch.body_rest())["reason"], "Expired");
  } else {
    EXPECT_EQ(watch.status(), 200);
    const std::vector<json> events = watch.WaitForEvents(1);
    ASSERT_THAT(Types(events), ElementsAre("ERROR"));
    EXPECT_EQ(events[0]["object"]["kind"], "Status");
    EXPECT_EQ(events[0]["object"]["code"], 410);
    EXPECT_TRUE(watch.ended_cleanly());
  }
  // The current version is still watchable.
  auto current = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  EXPECT_EQ(current->status(), 200);
}

INSTANTIATE_TEST_SUITE_P(BothAnswers, ExpiredWatchTest,
                         ::testing::Values(ExpiredCase{"Http410", ExpiredWatchAnswer::kHttp410},
                                           ExpiredCase{"ErrorEvent", ExpiredWatchAnswer::kErrorEvent}),
                         [](const ::testing::TestParamInfo<ExpiredCase>& info) { return info.param.name; });

TEST_F(FakeApiServerTest, ExpireWatchesSendsAnErrorEventAndEndsTheStream) {
  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  server_->ExpireWatches(FakeResource::kPods);
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_THAT(Types(watch->WaitForEvents(1)), ElementsAre("ERROR"));
  EXPECT_TRUE(watch->ended_cleanly());
}

// --- PATCH and Binding ---------------------------------------------------------------------

TEST_F(FakeApiServerTest, PatchMergesAnnotationsBumpsTheVersionAndEmitsModified) {
  const json pod = AddPod("default", "p1");
  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  const json patch = {
      {"metadata", {{"uid", pod["metadata"]["uid"]}, {"annotations", {{"tessera.io/gpu-assignment", "{}"}}}}}};
  for (const char* type : {"application/merge-patch+json", "application/strategic-merge-patch+json"}) {
    SCOPED_TRACE(type);
    const Answer answer = Client().Send(http::verb::patch, "/api/v1/namespaces/default/pods/p1", patch.dump(), type);
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(answer.Json()["metadata"]["annotations"]["tessera.io/gpu-assignment"], "{}");
  }
  const json stored = *server_->Pod("default", "p1");
  EXPECT_EQ(stored["metadata"]["uid"], pod["metadata"]["uid"]);
  EXPECT_EQ(stored["metadata"]["resourceVersion"], std::to_string(server_->ResourceVersion()));
  EXPECT_THAT(Types(watch->WaitForEvents(2)), ElementsAre("MODIFIED", "MODIFIED"));
}

TEST_F(FakeApiServerTest, PatchPreconditionsAndErrorsAnswerStatusObjects) {
  const json pod = AddPod("default", "p1");
  const std::string rv = pod["metadata"]["resourceVersion"];
  struct Case {
    std::string name;
    std::string target;
    std::string body;
    std::string content_type;
    int status;
  };
  const std::vector<Case> cases = {
      {"a different uid is invalid, as kube-apiserver answers", "/api/v1/namespaces/default/pods/p1",
       R"({"metadata":{"uid":"someone-else","annotations":{"a":"b"}}})", "application/merge-patch+json", 422},
      {"a different uid in a status patch is invalid too", "/api/v1/namespaces/default/pods/p1/status",
       R"({"metadata":{"uid":"someone-else"},"status":{"nominatedNodeName":"n1"}})", "application/merge-patch+json",
       422},
      {"a stale resourceVersion is a conflict", "/api/v1/namespaces/default/pods/p1",
       R"({"metadata":{"resourceVersion":"1","annotations":{"a":"b"}}})", "application/merge-patch+json", 409},
      {"a missing pod is not found", "/api/v1/namespaces/default/pods/nope", R"({"metadata":{}})",
       "application/merge-patch+json", 404},
      {"plain JSON is an unsupported media type", "/api/v1/namespaces/default/pods/p1", R"({})", "application/json",
       415},
      {"a body that is not JSON is a bad request", "/api/v1/namespaces/default/pods/p1", "{",
       "application/merge-patch+json", 400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Answer answer = Client().Send(http::verb::patch, c.target, c.body, c.content_type);
    EXPECT_EQ(answer.status, c.status) << answer.body;
    EXPECT_EQ(answer.Json()["kind"], "Status");
    EXPECT_EQ(answer.Json()["code"], c.status);
  }
  EXPECT_EQ((*server_->Pod("default", "p1"))["metadata"]["resourceVersion"], rv) << "nothing was applied";
  EXPECT_EQ(server_->Requests("PATCH").size(), cases.size());
}

TEST_F(FakeApiServerTest, BindingSetsTheNodeOnceThenConflicts) {
  const json pod = AddPod("default", "p1");
  const auto binding = [&](const std::string& node, const std::string& uid, const std::string& pod = "p1") {
    return json{{"apiVersion", "v1"},
                {"kind", "Binding"},
                {"metadata", {{"name", pod}, {"namespace", "default"}, {"uid", uid}}},
                {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}}
        .dump();
  };
  const std::string uid = pod["metadata"]["uid"];
  const std::string target = "/api/v1/namespaces/default/pods/p1/binding";
  TlsClient client = Client();

  EXPECT_EQ(client.Send(http::verb::post, target, binding("n1", "wrong-uid"), "application/json").status, 409);
  const Answer bound = client.Send(http::verb::post, target, binding("n1", uid), "application/json");
  ASSERT_EQ(bound.status, 201) << bound.body;
  EXPECT_EQ(bound.Json()["status"], "Success");
  EXPECT_EQ((*server_->Pod("default", "p1"))["spec"]["nodeName"], "n1");

  const Answer again = client.Send(http::verb::post, target, binding("n2", uid), "application/json");
  EXPECT_EQ(again.status, 409);
  EXPECT_THAT(again.Json()["message"].get<std::string>(), HasSubstr("already assigned to node \"n1\""));
  EXPECT_EQ(client
                .Send(http::verb::post, "/api/v1/namespaces/default/pods/nope/binding", binding("n1", "", "nope"),
                      "application/json")
                .status,
            404);
  EXPECT_EQ((*server_->Pod("default", "p1"))["spec"]["nodeName"], "n1");
}

TEST_F(FakeApiServerTest, AStatusPatchSetsAndClearsTheNominatedNodeButNeverTheSpec) {
  const json pod = AddPod("default", "p1");
  const std::string target = "/api/v1/namespaces/default/pods/p1/status";
  const json nominate = {{"metadata", {{"uid", pod["metadata"]["uid"]}}},
                         {"spec", {{"nodeName", "sneaked-in"}}},
                         {"status", {{"nominatedNodeName", "n1"}}}};
  TlsClient client = Client();
  const Answer set = client.Send(http::verb::patch, target, nominate.dump(), "application/merge-patch+json");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.Json()["status"]["nominatedNodeName"], "n1");
  EXPECT_FALSE(set.Json()["spec"].contains("nodeName")) << "the status subresource keeps the stored spec";
  EXPECT_EQ(client.Get(target).Json()["status"]["nominatedNodeName"], "n1");

  const json clear = {{"status", {{"nominatedNodeName", nullptr}}}};
  ASSERT_EQ(client.Send(http::verb::patch, target, clear.dump(), "application/merge-patch+json").status, 200);
  EXPECT_FALSE((*server_->Pod("default", "p1"))["status"].contains("nominatedNodeName"));
  EXPECT_EQ((*server_->Pod("default", "p1"))["status"]["phase"], "Pending");
}

// --- eviction ------------------------------------------------------------------------------

json Eviction(const std::string& name, const std::string& uid) {
  json eviction = {{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", name}, {"namespace", "default"}}}};
  if (!uid.empty()) eviction["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  return eviction;
}

class FakeApiServerEviction : public FakeApiServerTest {
 protected:
  // A pod bound to n1, with this grace period (none: the spec says nothing).
  json BoundPod(const std::string& name, std::optional<int> grace) {
    json pod = FakeApiServer::MinimalPod("default", name);
    pod["spec"]["nodeName"] = "n1";
    if (grace.has_value()) pod["spec"]["terminationGracePeriodSeconds"] = *grace;
    absl::StatusOr<json> added = server_->AddPod(pod);
    EXPECT_TRUE(added.ok()) << added.status();
    return added.ok() ? *added : json();
  }
  Answer Evict(const std::string& name, const std::string& uid) {
    return Client().Send(http::verb::post, absl::StrCat("/api/v1/namespaces/default/pods/", name, "/eviction"),
                         Eviction(name, uid).dump(), "application/json");
  }
};

TEST_F(FakeApiServerEviction, APodWithoutGraceIsMarkedThenDeletedAndTheWatchSeesEachWrite) {
  const json pod = BoundPod("p1", 0);
  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  const Answer answer = Evict("p1", pod["metadata"]["uid"]);
  ASSERT_EQ(answer.status, 201) << answer.body;
  EXPECT_EQ(answer.Json()["status"], "Success");
  EXPECT_FALSE(server_->Pod("default", "p1").has_value());
  const std::vector<json> events = watch->WaitForEvents(3);
  EXPECT_THAT(Types(events), ElementsAre("MODIFIED", "MODIFIED", "DELETED"));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["object"]["status"]["conditions"].back()["type"], "DisruptionTarget");
  EXPECT_EQ(events[1]["object"]["metadata"]["deletionGracePeriodSeconds"], 0);
}

TEST_F(FakeApiServerEviction, ABoundPodWithAGracePeriodIsOnlyMarkedForItsKubelet) {
  for (const std::optional<int> grace : {std::optional<int>(30), std::optional<int>()}) {
    SCOPED_TRACE(grace.has_value() ? "grace 30 s" : "no grace in the spec: 30 s");
    const std::string name = grace.has_value() ? "explicit" : "defaulted";
    const json pod = BoundPod(name, grace);
    ASSERT_EQ(Evict(name, pod["metadata"]["uid"]).status, 201);
    const std::optional<json> stored = server_->Pod("default", name);
    ASSERT_TRUE(stored.has_value()) << "still there until a kubelet stops it";
    EXPECT_TRUE((*stored)["metadata"].contains("deletionTimestamp"));
    EXPECT_EQ((*stored)["metadata"]["deletionGracePeriodSeconds"], 30);
    EXPECT_EQ(Evict(name, pod["metadata"]["uid"]).status, 201) << "evicting it again changes nothing";
    EXPECT_EQ((*server_->Pod("default", name))["metadata"]["resourceVersion"], (*stored)["metadata"]["resourceVersion"]);
  }
}

TEST_F(FakeApiServerEviction, RefusalsAnswerStatusObjectsAndLeaveThePod) {
  const json pod = BoundPod("p1", 0);
  const std::string uid = pod["metadata"]["uid"];
  ASSERT_TRUE(server_->SetPodPhase("default", "p1", "Running").ok());
  server_->RefuseEvictions("default", "p1", "p1-budget");
  struct Case {
    std::string name;
    std::string target;
    json body;
    int status;
    std::string message;
  };
  const std::string path = "/api/v1/namespaces/default/pods/";
  const std::vector<Case> cases = {
      {"a budget refuses a running pod, naming itself in the causes", path + "p1/eviction", Eviction("p1", uid), 429,
       "disruption budget"},
      {"a budget is checked before the uid", path + "p1/eviction", Eviction("p1", "someone-else"), 429, ""},
      {"a missing pod is not found", path + "nope/eviction", Eviction("nope", ""), 404, "not found"},
      {"the names must agree", path + "p1/eviction", Eviction("p2", uid), 400, "does not match"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Answer answer = Client().Send(http::verb::post, c.target, c.body.dump(), "application/json");
    EXPECT_EQ(answer.status, c.status) << answer.body;
    EXPECT_EQ(answer.Json()["kind"], "Status");
    EXPECT_THAT(answer.Json()["message"].get<std::string>(), HasSubstr(c.message));
  }
  EXPECT_EQ(Evict("p1", uid).Json()["details"]["causes"][0]["message"],
            "The disruption budget p1-budget needs 1 healthy pods and has 1 currently");

  server_->AllowEvictions("default", "p1");
  const Answer replaced = Evict("p1", "someone-else");
  EXPECT_EQ(replaced.status, 409) << replaced.body;
  EXPECT_THAT(replaced.Json()["message"].get<std::string>(), HasSubstr("does not match the UID in record"));
  EXPECT_TRUE(server_->Pod("default", "p1").has_value());
  EXPECT_EQ(Evict("p1", uid).status, 201);
  EXPECT_FALSE(server_->Pod("default", "p1").has_value());
}

TEST_F(FakeApiServerEviction, ABudgetDoesNotGuardAPendingPod) {
  const json pod = BoundPod("p1", 0);  // bound, never started: Pending
  server_->RefuseEvictions("default", "p1", "p1-budget");
  EXPECT_EQ(Evict("p1", pod["metadata"]["uid"]).status, 201);
  EXPECT_FALSE(server_->Pod("default", "p1").has_value());
}

// --- authentication ---------------------------------------------------------------------

TEST_F(FakeApiServerTest, BearerTokenIsRequiredWhenConfiguredAndCanRotate) {
  StartServer(WithToken("s3cret"));
  const auto get_with = [&](const std::string& token) {
    ClientOptions options = Trusting();
    options.token = token;
    return TlsClient(server_->port(), options).Get("/api/v1/nodes").status;
  };
  EXPECT_EQ(get_with(""), 401);
  EXPECT_EQ(get_with("wrong"), 401);
  EXPECT_EQ(get_with("s3cret"), 200);
  server_->SetBearerToken("rotated");
  EXPECT_EQ(get_with("s3cret"), 401);
  EXPECT_EQ(get_with("rotated"), 200);
  EXPECT_EQ(server_->Requests("GET", "/api/v1/nodes").back().headers.at("authorization"), "Bearer rotated");
}

TEST_F(FakeApiServerTest, RequiredClientCertificateMustBeSignedByTheTestCa) {
  FakeApiServerOptions options = Quiet();
  options.require_client_cert = true;
  StartServer(options);
  EXPECT_EQ(Client().Get("/api/v1/nodes").status, 0) << "no certificate, no answer";

  absl::StatusOr<TlsTestCerts> stranger = TlsTestCerts::Generate(OtherCa());
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  ClientOptions foreign = Trusting();
  foreign.client_cert = &stranger->client;
  EXPECT_EQ(TlsClient(server_->port(), foreign).Get("/api/v1/nodes").status, 0);

  ClientOptions own = Trusting();
  own.client_cert = &server_->certs().client;
  EXPECT_EQ(TlsClient(server_->port(), own).Get("/api/v1/nodes").status, 200);
  EXPECT_EQ(server_->Requests("GET").back().client_cert_common_name, "tessera-scheduler");
}

TEST_F(FakeApiServerTest, ClientTrustingAnotherCaRefusesTheServer) {
  absl::StatusOr<TlsTestCerts> stranger = TlsTestCerts::Generate(OtherCa());
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  ClientOptions options;
  options.ca_pem = stranger->ca.cert_pem;
  TlsClient client(server_->port(), options);
  EXPECT_TRUE(client.connect_error());
}

// --- fault injection ------------------------------------------------------------------

TEST_F(FakeApiServerTest, FailNextAnswersTheInjectedStatusThenRecovers) {
  server_->FailNext({"GET", "/api/v1/nodes"}, 500, 2);
  server_->FailNext({"GET", "/api/v1/pods", /*watch=*/false}, 429);
  TlsClient client = Client();
  const Answer first = client.Get("/api/v1/nodes");
  EXPECT_EQ(first.status, 500);
  EXPECT_EQ(first.Json()["reason"], "InternalError");
  EXPECT_EQ(client.Get("/api/v1/nodes?limit=5").status, 500);
  EXPECT_EQ(client.Get("/api/v1/nodes").status, 200);
  const Answer throttled = client.Get("/api/v1/pods");
  EXPECT_EQ(throttled.status, 429);
  EXPECT_EQ(throttled.retry_after, "1");
  EXPECT_EQ(client.Get("/api/v1/pods").status, 200);
}

TEST_F(FakeApiServerTest, ConflictNextAppliesNothing) {
  const json pod = AddPod("default", "p1");
  server_->ConflictNextPatch();
  server_->ConflictNextBinding();
  TlsClient client = Client();
  const std::string patch = R"({"metadata":{"annotations":{"a":"b"}}})";
  const std::string binding = R"({"metadata":{"name":"p1"},"target":{"kind":"Node","name":"n1"}})";
  EXPECT_EQ(client.Send(http::verb::patch, "/api/v1/namespaces/default/pods/p1", patch, "application/merge-patch+json")
                .status,
            409);
  EXPECT_EQ(
      client.Send(http::verb::post, "/api/v1/namespaces/default/pods/p1/binding", binding, "application/json").status,
      409);
  EXPECT_EQ(*server_->Pod("default", "p1"), pod);
  EXPECT_EQ(client.Send(http::verb::patch, "/api/v1/namespaces/default/pods/p1", patch, "application/merge-patch+json")
                .status,
            200);
  EXPECT_EQ(
      client.Send(http::verb::post, "/api/v1/namespaces/default/pods/p1/binding", binding, "application/json").status,
      201);
}

TEST_F(FakeApiServerTest, DelayNextHoldsTheAnswerBackForAtLeastTheDelay) {
  server_->DelayNext({"", "/api/v1/nodes"}, std::chrono::milliseconds(300));
  TlsClient client = Client();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client.Get("/api/v1/nodes").status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
}

TEST_F(FakeApiServerTest, DroppedWatchIsCutMidStreamAfterTheGivenEvents) {
  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  server_->DropWatchStreamsAfter(FakeResource::kPods, 2);
  for (const char* name : {"p1", "p2", "p3"}) AddPod("default", name);
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_FALSE(watch->ended_cleanly()) << "the client sees the connection end without the final chunk";
  EXPECT_THAT(Types(watch->WaitForEvents(2)), ElementsAre("ADDED", "ADDED"));
  EXPECT_TRUE(WaitFor([&] { return server_->OpenWatchStreams(FakeResource::kPods) == 0; }));

  auto again = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  auto nodes = OpenWatch("/api/v1/nodes?watch=1", FakeResource::kNodes);
  server_->DropAllWatches();
  EXPECT_TRUE(again->WaitForEnd());
  EXPECT_TRUE(nodes->WaitForEnd());
  EXPECT_FALSE(again->ended_cleanly());
  EXPECT_EQ(server_->WatchConnections(FakeResource::kPods), 2);
  EXPECT_EQ(server_->WatchConnections(FakeResource::kNodes), 1);
}

TEST_F(FakeApiServerTest, MalformedEventLinesAreDeliveredAsIs) {
  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  // Each line is awaited before the next is made: an injected line and a
  // store change reach the stream by different paths, in either order.
  server_->InjectMalformedEvent(FakeResource::kPods, MalformedEvent::kNotJson);
  ASSERT_EQ(watch->WaitForLines(1).size(), 1u);
  server_->InjectMalformedEvent(FakeResource::kPods, MalformedEvent::kMissingObject);
  ASSERT_EQ(watch->WaitForLines(2).size(), 2u);
  AddPod("default", "after");
  const std::vector<std::string> lines = watch->WaitForLines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], R"({"type":"MODIFIED","object":{"kind":)");
  EXPECT_TRUE(json::parse(lines[0], nullptr, false).is_discarded());
  EXPECT_EQ(lines[1], R"({"type":"MODIFIED"})");
  EXPECT_EQ(json::parse(lines[2])["object"]["metadata"]["name"], "after");
}

TEST_F(FakeApiServerTest, MalformedEventWaitsForTheNextStreamWhenNoneIsOpen) {
  server_->InjectMalformedEvent(FakeResource::kNodes, MalformedEvent::kUnknownType);
  auto watch = OpenWatch("/api/v1/nodes?watch=1", FakeResource::kNodes);
  const std::vector<json> events = watch->WaitForEvents(1);
  ASSERT_THAT(Types(events), ElementsAre("EXPLODED"));
  EXPECT_EQ(events[0]["object"]["kind"], "Node");
}

// --- lifecycle ------------------------------------------------------------------------

TEST_F(FakeApiServerTest, RestartOnTheSamePortKeepsTheStoreAndCutsStreams) {
  AddPod("default", "p1");
  const uint16_t port = server_->port();
  auto watch = OpenWatch(absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", server_->ResourceVersion()));
  server_->Stop();
  EXPECT_FALSE(server_->running());
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_FALSE(watch->ended_cleanly());
  EXPECT_EQ(Client().Get("/api/v1/pods").status, 0) << "nobody listens while stopped";

  AddPod("default", "p2");  // changes while "down" are replayed after the restart
  ASSERT_TRUE(server_->Start().ok());
  EXPECT_EQ(server_->port(), port);
  EXPECT_THAT(Names(Client().Get("/api/v1/pods").Json()), ElementsAre("p1", "p2"));
  EXPECT_EQ(server_->OpenWatchStreams(FakeResource::kPods), 0);
}

TEST_F(FakeApiServerTest, KubeconfigNamesTheServerItsCaAndTheCredentials) {
  StartServer(WithToken("tok"));
  KubeconfigOptions inline_options;
  inline_options.client_cert = true;
  absl::StatusOr<std::string> inline_config = server_->Kubeconfig(inline_options);
  ASSERT_TRUE(inline_config.ok()) << inline_config.status();
  EXPECT_THAT(*inline_config, HasSubstr(absl::StrCat("server: ", server_->url())));
  EXPECT_THAT(*inline_config, HasSubstr("certificate-authority-data: "));
  EXPECT_THAT(*inline_config, HasSubstr("client-key-data: "));
  EXPECT_THAT(*inline_config, HasSubstr("token: tok"));

  KubeconfigOptions file_options = inline_options;
  file_options.inline_data = false;
  absl::StatusOr<std::string> path = server_->WriteKubeconfig(file_options);
  ASSERT_TRUE(path.ok()) << path.status();
  const TlsTestCertFiles* files = *server_->cert_files();
  const std::string text = [&] {
    std::ifstream in(*path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_THAT(text, HasSubstr(absl::StrCat("certificate-authority: ", files->ca_cert())));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("client-key: ", files->client_key())));
  std::ifstream ca(files->ca_cert());
  EXPECT_TRUE(ca.good());
}

}  // namespace
}  // namespace tessera::testing
