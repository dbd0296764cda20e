// H2Connection, the server's HTTP/2 without a socket, against nghttp2's own
// client session (test/testing/http2_client.h): bytes are passed by hand
// between the two, so every limit and deadline is exercised exactly.
#include "extender/server/h2_connection.h"

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/http2_client.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;
using testing::Http2Call;
using testing::Http2ClientSession;
using ::testing::HasSubstr;
using Clock = H2Connection::Clock;

HttpServerOptions Limits(size_t body_limit = 1 << 20, uint32_t header_limit = 8 << 10, uint32_t streams = 16) {
  HttpServerOptions o;
  o.body_limit = body_limit;
  o.header_limit = header_limit;
  o.max_concurrent_streams = streams;
  return o;
}

Http2Call Post(std::string target, std::string body) {
  return Http2Call{.method = http::verb::post, .target = std::move(target), .body = std::move(body)};
}

HttpResponse Ok(std::string body) {
  HttpResponse res{http::status::ok, 20};
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// Hooks whose budget never runs out and keeps in `held` what is taken.
H2ConnectionHooks CountingBudget(uint64_t& held) {
  H2ConnectionHooks hooks;
  hooks.reserve_body = [&held](uint64_t n) { return held += n, true; };
  hooks.release_body = [&held](uint64_t n) { held -= n; };
  return hooks;
}

// A server connection and a client, and the wire between them.
class Wire {
 public:
  explicit Wire(const HttpServerOptions& options, H2ConnectionHooks hooks = {}) {
    absl::StatusOr<std::unique_ptr<H2Connection>> server = H2Connection::Create(options, std::move(hooks));
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) server_ = *std::move(server);
  }

  // Passes bytes both ways until neither side has more to say.
  void Pump(Clock::time_point now = Clock::now()) {
    for (int round = 0; round < 100; ++round) {
      const std::string to_server = client_.TakeOutput();
      if (!to_server.empty()) last_receive_ = server_->Receive(to_server, now);
      std::string to_client;
      server_->TakeOutput(to_client);
      if (!to_client.empty()) client_.Receive(to_client);
      if (to_server.empty() && to_client.empty()) return;
    }
    ADD_FAILURE() << "the two sides kept talking";
  }

  // Pump(), then the requests the server has received whole.
  std::vector<H2Connection::Request> PassOver() {
    Pump();
    return server_->TakeRequests();
  }

  H2Connection& server() { return *server_; }
  Http2ClientSession& client() { return client_; }
  absl::Status last_receive() const { return last_receive_; }

 private:
  std::unique_ptr<H2Connection> server_;
  Http2ClientSession client_;
  absl::Status last_receive_;
};

TEST(H2ConnectionTest, HandsOverAWholeRequestAndSendsItsAnswerOnItsStream) {
  Wire wire(Limits());
  const int32_t id = wire.client().Submit(Post("/scheduler/filter", R"({"Pod":{}})"));
  const std::vector<H2Connection::Request> requests = wire.PassOver();
  ASSERT_EQ(requests.size(), 1u);
  const HttpRequest& req = requests[0].request;
  EXPECT_EQ(requests[0].stream, static_cast<uint32_t>(id));
  EXPECT_EQ(req.method(), http::verb::post);
  EXPECT_EQ(req.target(), "/scheduler/filter");
  EXPECT_EQ(req.body(), R"({"Pod":{}})");
  EXPECT_EQ(req[http::field::content_type], "application/json");
  EXPECT_EQ(req[http::field::content_length], "10");  // as the HTTP/1.1 handlers see it
  EXPECT_EQ(req[http::field::host], "127.0.0.1");
  EXPECT_EQ(req.version(), 20);

  wire.server().Answer(requests[0].stream, Ok(R"({"NodeNames":["a"]})"));
  wire.Pump();
  const testing::Http2Answer& answer = wire.client().answer(id);
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, R"({"NodeNames":["a"]})");
  EXPECT_EQ(answer.headers.at("content-type"), "application/json");
  EXPECT_EQ(answer.headers.at("content-length"), "19");
  EXPECT_TRUE(answer.closed);
  EXPECT_EQ(wire.server().open_streams(), 0u);
  EXPECT_TRUE(wire.server().Alive());  // the connection stays for the next requests
}

TEST(H2ConnectionTest, AnswersManyRequestsAtOnceInWhateverOrderTheyAreAnswered) {
  Wire wire(Limits());
  std::vector<int32_t> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(wire.client().Submit(Post("/p", std::to_string(i))));
  const std::vector<H2Connection::Request> requests = wire.PassOver();
  ASSERT_EQ(requests.size(), 10u);
  for (auto it = requests.rbegin(); it != requests.rend(); ++it) {
    wire.server().Answer(it->stream, Ok("echo " + it->request.body()));
  }
  wire.Pump();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(wire.client().answer(ids[i]).status, 200);
    EXPECT_EQ(wire.client().answer(ids[i]).body, "echo " + std::to_string(i));
  }
}

TEST(H2ConnectionTest, CarriesABodyLargerThanTheDefaultFlowControlWindow) {
  Wire wire(Limits(size_t{4} << 20));
  const std::string big(3 << 20, 'x');  // 3 MiB: past 64 KiB, the protocol's initial window
  const int32_t id = wire.client().Submit(Post("/big", big));
  const std::vector<H2Connection::Request> requests = wire.PassOver();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].request.body().size(), big.size());
  wire.server().Answer(requests[0].stream, Ok(std::string(2 << 20, 'y')));
  wire.Pump();
  EXPECT_EQ(wire.client().answer(id).body.size(), size_t{2} << 20);
}

TEST(H2ConnectionTest, DropsConnectionSpecificHeadersThatHttp2Forbids) {
  Wire wire(Limits());
  const int32_t id = wire.client().Submit(Post("/p", "x"));
  const std::vector<H2Connection::Request> requests = wire.PassOver();
  ASSERT_EQ(requests.size(), 1u);
  HttpResponse res = Ok("{}");
  res.set(http::field::connection, "keep-alive");
  res.set(http::field::retry_after, "1");
  wire.server().Answer(requests[0].stream, res);
  wire.Pump();
  // With a Connection header the client would have reset the stream as malformed.
  EXPECT_EQ(wire.client().answer(id).status, 200);
  EXPECT_EQ(wire.client().answer(id).headers.count("connection"), 0u);
  EXPECT_EQ(wire.client().answer(id).headers.at("retry-after"), "1");
}

struct RejectionCase {
  std::string name;
  HttpServerOptions options;
  Http2Call call;
  bool budget_spent = false;
  int status = 0;
  std::string reason;
};

class H2RejectionTest : public ::testing::TestWithParam<RejectionCase> {};

TEST_P(H2RejectionTest, AnswersTheRequestItselfWithAJsonReasonAndKeepsTheConnection) {
  const RejectionCase& c = GetParam();
  std::vector<http::status> counted;
  H2ConnectionHooks hooks;
  hooks.reserve_body = [&](uint64_t) { return !c.budget_spent; };
  hooks.count_rejection = [&](http::status s) { counted.push_back(s); };
  Wire wire(c.options, hooks);
  const int32_t id = wire.client().Submit(c.call);
  wire.Pump();
  EXPECT_TRUE(wire.server().TakeRequests().empty()) << "the handler saw a request the connection refused";
  const testing::Http2Answer& answer = wire.client().answer(id);
  EXPECT_EQ(answer.status, c.status);
  EXPECT_THAT(answer.body, HasSubstr(c.reason));
  EXPECT_EQ(answer.headers.at("content-type"), "application/json");
  EXPECT_TRUE(answer.closed);
  ASSERT_EQ(counted.size(), 1u);
  EXPECT_EQ(static_cast<int>(counted[0]), c.status);
  // The connection serves on.
  const int32_t next = wire.client().Submit(Post("/p", ""));
  wire.Pump();
  EXPECT_EQ(wire.server().TakeRequests().size(), 1u) << "stream " << next;
}

Http2Call WithHeader(Http2Call call, std::string name, std::string value) {
  call.headers.emplace_back(std::move(name), std::move(value));
  return call;
}

INSTANTIATE_TEST_SUITE_P(
    Limits, H2RejectionTest,
    ::testing::Values(
        RejectionCase{"a_body_over_the_limit_is_413", Limits(100), Post("/p", std::string(1000, 'x')), false, 413,
                      "request body exceeds the 100-byte limit"},
        RejectionCase{"a_content_length_over_the_limit_is_413_before_the_body_ends", Limits(100),
                      [] {
                        Http2Call call = WithHeader(Post("/p", "x"), "content-length", "5000");
                        call.leave_open = true;  // the rest never comes; the answer does not wait for it
                        return call;
                      }(),
                      false, 413, "request body exceeds the 100-byte limit"},
        RejectionCase{"a_header_list_over_the_limit_is_431", Limits(1 << 20, 200),
                      WithHeader(Post("/p", "x"), "x-padding", std::string(300, 'a')), false, 431,
                      "request header exceeds the 200-byte limit"},
        RejectionCase{"a_body_past_the_servers_budget_is_503", Limits(), Post("/p", "some body"), true, 503,
                      "server busy"}),
    [](const auto& info) { return info.param.name; });

TEST(H2ConnectionTest, AnswerToABusyServerSaysWhenToRetry) {
  H2ConnectionHooks hooks;
  hooks.reserve_body = [](uint64_t) { return false; };
  Wire wire(Limits(), hooks);
  const int32_t id = wire.client().Submit(Post("/p", "x"));
  wire.Pump();
  EXPECT_EQ(wire.client().answer(id).headers.at("retry-after"), "1");
}

TEST(H2ConnectionTest, HoldsEachBodyInTheBudgetUntilItsStreamCloses) {
  uint64_t held = 0;
  const H2ConnectionHooks hooks = CountingBudget(held);
  Wire wire(Limits(), hooks);
  wire.client().Submit(Post("/p", std::string(1000, 'a')));
  wire.client().Submit(Post("/p", std::string(500, 'b')));
  const std::vector<H2Connection::Request> requests = wire.PassOver();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(held, 1500u);
  wire.server().Answer(requests[0].stream, Ok("{}"));
  wire.Pump();
  EXPECT_EQ(held, 500u);
  wire.server().Answer(requests[1].stream, Ok("{}"));
  wire.Pump();
  EXPECT_EQ(held, 0u);
}

TEST(H2ConnectionTest, GivesTheBudgetBackForStreamsStillOpenWhenTheConnectionGoes) {
  uint64_t held = 0;
  const H2ConnectionHooks hooks = CountingBudget(held);
  {
    Wire wire(Limits(), hooks);
    wire.client().Submit(Post("/p", std::string(700, 'a')));
    wire.Pump();
    EXPECT_EQ(held, 700u);
  }
  EXPECT_EQ(held, 0u);
}

TEST(H2ConnectionTest, RefusesStreamsBeyondTheAdvertisedLimitSoTheClientRetries) {
  Wire wire(Limits(1 << 20, 8 << 10, 2));
  std::vector<int32_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(wire.client().Submit(Post("/p", "x")));
  wire.Pump();
  EXPECT_EQ(wire.client().max_concurrent_streams(), 2u);
  EXPECT_EQ(wire.server().TakeRequests().size(), 2u);
  EXPECT_EQ(wire.client().answer(ids[2]).reset_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
}

TEST(H2ConnectionTest, ResetsARequestNotReceivedWholeWithinItsDeadline) {
  uint64_t held = 0;
  const H2ConnectionHooks hooks = CountingBudget(held);
  Wire wire(Limits(), hooks);
  const Clock::time_point start = Clock::now();
  Http2Call slow = Post("/p", "part of a body");
  slow.leave_open = true;
  const int32_t id = wire.client().Submit(slow);
  wire.Pump(start);
  EXPECT_EQ(held, 14u);
  // Not yet past its deadline: kept, and reported as the oldest.
  EXPECT_EQ(wire.server().ResetRequestsStartedBefore(start), start);
  wire.Pump();
  EXPECT_FALSE(wire.client().answer(id).closed);
  // Past it: reset.
  EXPECT_EQ(wire.server().ResetRequestsStartedBefore(start + std::chrono::seconds(1)), std::nullopt);
  wire.Pump();
  EXPECT_EQ(wire.client().answer(id).reset_code, static_cast<uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(held, 0u);
  EXPECT_TRUE(wire.server().TakeRequests().empty());
}

TEST(H2ConnectionTest, IgnoresAnAnswerForAStreamTheClientGaveUpOn) {
  Wire wire(Limits());
  const int32_t id = wire.client().Submit(Post("/p", "x"));
  const std::vector<H2Connection::Request> requests = wire.PassOver();
  ASSERT_EQ(requests.size(), 1u);
  wire.client().Reset(id);
  wire.Pump();
  EXPECT_EQ(wire.server().open_streams(), 0u);
  wire.server().Answer(requests[0].stream, Ok("late"));
  wire.Pump();
  EXPECT_EQ(wire.client().answer(id).status, 0);
  EXPECT_TRUE(wire.server().Alive());
}

TEST(H2ConnectionTest, ShutdownAnswersWhatItTookAndThenHasNothingLeftToDo) {
  Wire wire(Limits());
  const int32_t id = wire.client().Submit(Post("/p", "x"));
  const std::vector<H2Connection::Request> requests = wire.PassOver();
  ASSERT_EQ(requests.size(), 1u);
  wire.server().Shutdown();
  wire.Pump();
  EXPECT_TRUE(wire.client().goaway());
  EXPECT_EQ(wire.client().goaway_last_stream(), id);
  EXPECT_EQ(wire.client().goaway_error(), static_cast<uint32_t>(NGHTTP2_NO_ERROR));
  EXPECT_TRUE(wire.server().Alive()) << "an answer is still owed";
  wire.server().Answer(requests[0].stream, Ok("done"));
  wire.Pump();
  EXPECT_EQ(wire.client().answer(id).body, "done");
  EXPECT_FALSE(wire.server().Alive());
}

TEST(H2ConnectionTest, RefusesABytestreamThatIsNotHttp2) {
  absl::StatusOr<std::unique_ptr<H2Connection>> server = H2Connection::Create(Limits());
  ASSERT_TRUE(server.ok()) << server.status();
  const absl::Status received = (*server)->Receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_FALSE(received.ok());
  EXPECT_THAT(std::string(received.message()), HasSubstr("preface"));
  std::string out;
  (*server)->TakeOutput(out);
  EXPECT_FALSE((*server)->Alive());
}

TEST(H2ConnectionTest, EndsTheConnectionWithAGoawayOnAProtocolError) {
  Wire wire(Limits());
  wire.client().Submit(Post("/p", "x"));
  wire.Pump();
  // A DATA frame on stream 0 is a connection error (RFC 9113 §6.1).
  const std::string bad_frame = std::string("\x00\x00\x01\x00\x00\x00\x00\x00\x00", 9) + "z";
  (void)wire.server().Receive(bad_frame);
  std::string out;
  wire.server().TakeOutput(out);
  wire.client().Receive(out);
  EXPECT_TRUE(wire.client().goaway());
  EXPECT_EQ(wire.client().goaway_error(), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_FALSE(wire.server().Alive());
}

}  // namespace
}  // namespace tessera
