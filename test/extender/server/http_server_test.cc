// HttpServer over real sockets on 127.0.0.1, port 0. The client is Beast on
// its own io_context; every client operation is bounded (kIoTimeout), so a
// server bug fails a test instead of hanging it.
#include "extender/server/http_server.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/eventually.h"

namespace tessera {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Only reached when the server misbehaves.
constexpr milliseconds kIoTimeout{2000};

HttpServerOptions TestOptions() {
  HttpServerOptions o;
  o.port = 0;
  o.threads = 2;
  return o;
}

// Echoes the body; "/slow" sleeps first, "/throw" throws.
HttpResponse Echo(const HttpRequest& req) {
  if (req.target() == "/throw") throw std::runtime_error("boom");
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, "text/plain");
  res.set("X-Target", req.target());
  res.body() = req.body();
  return res;
}

std::unique_ptr<HttpServer> MustStart(HttpServerOptions options, HttpHandler handler = Echo) {
  auto server = HttpServer::Start(std::move(options), std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

HttpRequest Post(std::string target, std::string body) {
  HttpRequest req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

// A blocking-looking client whose every operation has a deadline.
class Client {
 public:
  // `timeout` bounds each operation; raise it only for very large transfers
  // (ThreadSanitizer builds copy 20 MB slowly).
  explicit Client(uint16_t port, milliseconds timeout = kIoTimeout) : timeout_(timeout) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), connect_error_);
  }

  [[nodiscard]] error_code connect_error() const { return connect_error_; }

  error_code Write(const HttpRequest& req) {
    return Run([&](auto done) { http::async_write(socket_, req, done); });
  }

  error_code WriteRaw(std::string_view data) {
    return Run([&](auto done) { net::async_write(socket_, net::buffer(data.data(), data.size()), done); });
  }

  error_code Read(HttpResponse& res) {
    res = {};
    return Run([&](auto done) { http::async_read(socket_, buffer_, res, done); });
  }

  // Reads up to and including the first "\r\n\r\n" (an interim 100 response).
  std::string ReadHead() {
    std::string head;
    const error_code ec = Run([&](auto done) { net::async_read_until(socket_, net::dynamic_buffer(raw_), "\r\n\r\n", done); });
    if (ec) return "error: " + ec.message();
    const size_t end = raw_.find("\r\n\r\n") + 4;
    head = raw_.substr(0, end);
    raw_.erase(0, end);
    return head;
  }

  // Sends and receives one exchange.
  HttpResponse RoundTrip(const HttpRequest& req) {
    HttpResponse res;
    if (error_code ec = Write(req)) ADD_FAILURE() << "write: " << ec.message();
    if (error_code ec = Read(res)) ADD_FAILURE() << "read: " << ec.message();
    return res;
  }

  // True when the server closes the connection (EOF or reset) within
  // `timeout`; bytes that arrive meanwhile are appended to *received.
  bool ClosedWithin(milliseconds timeout, std::string* received = nullptr) {
    const auto deadline = Clock::now() + timeout;
    std::array<char, 4096> chunk;
    for (;;) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left <= milliseconds::zero()) return false;
      size_t n = 0;
      const error_code ec = Run(
          [&](auto done) {
            socket_.async_read_some(net::buffer(chunk), [&n, done](error_code ec, size_t got) mutable {
              n = got;
              done(ec, got);
            });
          },
          left);
      if (received != nullptr) received->append(chunk.data(), n);
      if (ec == net::error::timed_out) return false;
      if (ec) return true;  // eof, connection_reset
    }
  }

 private:
  template <typename Start>
  error_code Run(Start start, std::optional<milliseconds> deadline = std::nullopt) {
    const milliseconds timeout = deadline.value_or(timeout_);
    std::optional<error_code> result;
    start([&result](error_code ec, size_t) { result = ec; });
    ioc_.restart();
    ioc_.run_for(timeout);
    if (!result) {
      error_code ignored;
      socket_.cancel(ignored);
      ioc_.restart();
      ioc_.run();  // let the cancelled operation finish before `result` dies
      return net::error::timed_out;
    }
    return *result;
  }

  milliseconds timeout_;
  net::io_context ioc_;
  tcp::socket socket_{ioc_};
  error_code connect_error_;
  beast::flat_buffer buffer_;
  std::string raw_;
};

TEST(HttpServerTest, EchoesTheBodyWithContentTypeAndLength) {
  auto server = MustStart(TestOptions());
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->port(), 0);
  Client client(server->port());
  ASSERT_FALSE(client.connect_error()) << client.connect_error().message();

  HttpResponse res = client.RoundTrip(Post("/filter", R"({"Pod":null})"));
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), R"({"Pod":null})");
  EXPECT_EQ(res["X-Target"], "/filter");
  EXPECT_EQ(res[http::field::content_type], "text/plain");
  EXPECT_EQ(res[http::field::content_length], "12");
}

TEST(HttpServerTest, EchoesATwentyMegabyteBody) {
  // Full-node-object filter requests from large clusters are this big.
  auto server = MustStart(TestOptions());
  ASSERT_NE(server, nullptr);
  Client client(server->port(), milliseconds(20000));
  std::string body(20 << 20, 'n');
  body.front() = '[';
  body.back() = ']';
  HttpResponse res = client.RoundTrip(Post("/filter", body));
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body().size(), body.size());
  EXPECT_TRUE(res.body() == body);
}

TEST(HttpServerTest, FillsInContentTypeAndLengthTheHandlerLeftOut) {
  auto server = MustStart(TestOptions(), [](const HttpRequest&) {
    HttpResponse res{http::status::ok, 11};
    res.body() = "[]";
    return res;
  });
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  HttpResponse res = client.RoundTrip(Post("/prioritize", "{}"));
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(res[http::field::content_length], "2");
  EXPECT_EQ(res.body(), "[]");
}

TEST(HttpServerTest, KeepsTheConnectionAliveAcrossRequestsUntilConnectionClose) {
  std::atomic<int> calls{0};
  auto server = MustStart(TestOptions(), [&calls](const HttpRequest& req) {
    ++calls;
    return Echo(req);
  });
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    HttpResponse res = client.RoundTrip(Post("/filter", "request " + std::to_string(i)));
    EXPECT_EQ(res.result(), http::status::ok);
    EXPECT_EQ(res.body(), "request " + std::to_string(i));
    EXPECT_TRUE(res.keep_alive());
  }
  HttpRequest last = Post("/filter", "bye");
  last.keep_alive(false);
  HttpResponse res = client.RoundTrip(last);
  EXPECT_EQ(res.body(), "bye");
  EXPECT_FALSE(res.keep_alive());
  EXPECT_TRUE(client.ClosedWithin(kIoTimeout));
  EXPECT_EQ(calls.load(), 4);
}

TEST(HttpServerTest, AnswersExpectContinueBeforeTheBody) {
  auto server = MustStart(TestOptions());
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(client.WriteRaw("POST /filter HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                               "Content-Length: 5\r\n\r\n"));
  EXPECT_EQ(client.ReadHead(), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_FALSE(client.WriteRaw("hello"));
  HttpResponse res;
  ASSERT_FALSE(client.Read(res));
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), "hello");
}

struct RejectCase {
  std::string name;
  HttpServerOptions options;
  std::string raw;  // what the client sends
  http::status status;
  std::string body;  // exact, or a prefix when body_is_prefix
  bool body_is_prefix = false;
};

class HttpServerRejectTest : public ::testing::TestWithParam<RejectCase> {};

TEST_P(HttpServerRejectTest, AnswersJsonErrorClosesAndKeepsServing) {
  const RejectCase& c = GetParam();
  auto server = MustStart(c.options);
  ASSERT_NE(server, nullptr);
  {
    Client client(server->port());
    ASSERT_FALSE(client.WriteRaw(c.raw));
    HttpResponse res;
    ASSERT_FALSE(client.Read(res));
    EXPECT_EQ(res.result(), c.status);
    EXPECT_EQ(res[http::field::content_type], "application/json");
    EXPECT_EQ(res[http::field::content_length], std::to_string(res.body().size()));
    if (c.body_is_prefix) {
      EXPECT_THAT(res.body(), StartsWith(c.body));
    } else {
      EXPECT_EQ(res.body(), c.body);
    }
    EXPECT_FALSE(res.keep_alive());
    EXPECT_TRUE(client.ClosedWithin(kIoTimeout));
  }
  Client next(server->port());
  EXPECT_EQ(next.RoundTrip(Post("/filter", "still here")).body(), "still here");
}

HttpServerOptions WithLimits(size_t body_limit, uint32_t header_limit) {
  HttpServerOptions o = TestOptions();
  o.body_limit = body_limit;
  o.header_limit = header_limit;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HttpServerRejectTest,
    ::testing::Values(
        RejectCase{"ContentLengthOverTheBodyLimitGets413",
                   WithLimits(1024, 16 << 10),
                   "POST /filter HTTP/1.1\r\nHost: a\r\nContent-Length: 4096\r\n\r\n" + std::string(100, 'x'),
                   http::status::payload_too_large,
                   R"({"Error":"request body exceeds the 1024-byte limit"})"},
        RejectCase{"ChunkedBodyOverTheBodyLimitGets413",
                   WithLimits(1024, 16 << 10),
                   "POST /filter HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "400\r\n" + std::string(1024, 'x') + "\r\n10\r\n" + std::string(16, 'y') + "\r\n0\r\n\r\n",
                   http::status::payload_too_large,
                   R"({"Error":"request body exceeds the 1024-byte limit"})"},
        RejectCase{"HeaderOverTheHeaderLimitGets431",
                   WithLimits(1024, 1024),
                   "POST /filter HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(2000, 'a') +
                       "\r\nContent-Length: 0\r\n\r\n",
                   http::status::request_header_fields_too_large,
                   R"({"Error":"request header exceeds the 1024-byte limit"})"},
        RejectCase{"MalformedRequestLineGets400",
                   TestOptions(),
                   "THIS IS NOT HTTP\r\n\r\n",
                   http::status::bad_request,
                   R"({"Error":"malformed HTTP request: )",
                   /*body_is_prefix=*/true}),
    [](const ::testing::TestParamInfo<RejectCase>& info) { return info.param.name; });

TEST(HttpServerTest, HandlerExceptionGets500AndTheConnectionKeepsWorking) {
  auto server = MustStart(TestOptions());
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  HttpResponse res = client.RoundTrip(Post("/throw", "{}"));
  EXPECT_EQ(res.result(), http::status::internal_server_error);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(res.body(), R"({"Error":"internal error: boom"})");
  EXPECT_EQ(client.RoundTrip(Post("/filter", "next")).body(), "next");
}

TEST(HttpServerTest, InvalidResponseFromHandlerGets500) {
  // prepare_payload() rejects a body on a 204: the server's own step throws.
  auto server = MustStart(TestOptions(), [](const HttpRequest&) {
    HttpResponse res{http::status::no_content, 11};
    res.body() = "not allowed";
    return res;
  });
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  HttpResponse res = client.RoundTrip(Post("/filter", "{}"));
  EXPECT_EQ(res.result(), http::status::internal_server_error);
  EXPECT_THAT(res.body(), StartsWith(R"({"Error":"internal error: )"));
}

TEST(HttpServerTest, ThirtyTwoConcurrentClientsAreAllAnsweredCorrectly) {
  HttpServerOptions options = TestOptions();
  options.threads = 4;
  auto server = MustStart(options);
  ASSERT_NE(server, nullptr);
  constexpr int kClients = 32;
  constexpr int kRequests = 20;
  std::atomic<int> correct{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Client client(server->port());
      for (int r = 0; r < kRequests; ++r) {
        const std::string body = "client " + std::to_string(c) + " request " + std::to_string(r);
        HttpResponse res;
        if (client.Write(Post("/filter", body)) || client.Read(res)) return;
        if (res.result() == http::status::ok && res.body() == body) ++correct;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(correct.load(), kClients * kRequests);
}

TEST(HttpServerTest, ReadTimeoutClosesAConnectionThatSendsHalfARequest) {
  HttpServerOptions options = TestOptions();
  options.read_timeout = milliseconds(100);
  auto server = MustStart(options);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  const auto start = Clock::now();
  ASSERT_FALSE(client.WriteRaw("POST /filter HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc"));
  std::string received;
  EXPECT_TRUE(client.ClosedWithin(kIoTimeout, &received));
  EXPECT_GE(Clock::now() - start, milliseconds(90));
  EXPECT_EQ(received, "");  // closed unanswered
}

TEST(HttpServerTest, IdleTimeoutClosesAConnectionThatSendsNothing) {
  HttpServerOptions options = TestOptions();
  // Long enough that a starved CI machine still serves the first request
  // before the idle deadline: both completions ready at once race.
  options.idle_timeout = milliseconds(300);
  auto server = MustStart(options);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  EXPECT_EQ(client.RoundTrip(Post("/filter", "one")).body(), "one");
  std::string received;
  EXPECT_TRUE(client.ClosedWithin(kIoTimeout, &received));
  EXPECT_EQ(received, "");
}

TEST(HttpServerTest, ReadTimeoutDoesNotApplyWhileIdle) {
  HttpServerOptions options = TestOptions();
  // The requests themselves run under this deadline: a short one (50 ms
  // once) made the test fail on a loaded 2-core CI machine, where the read's
  // and the timer's completions became ready together.
  options.read_timeout = milliseconds(300);
  auto server = MustStart(options);
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  EXPECT_EQ(client.RoundTrip(Post("/filter", "one")).body(), "one");
  // Idle for 3x read_timeout (real time: the server's deadlines are Asio
  // timers), watching for the close that must not come.
  EXPECT_FALSE(client.ClosedWithin(3 * options.read_timeout)) << "closed while idle";
  EXPECT_EQ(client.RoundTrip(Post("/filter", "two")).body(), "two");
}

TEST(HttpServerTest, DrainFinishesRequestsInFlightClosesIdleAndRefusesNew) {
  std::promise<void> slow_started;
  absl::Notification slow_may_end;  // the test lets the slow request end once it has checked the drain
  std::atomic<bool> slow_done{false};
  auto server = MustStart(TestOptions(), [&](const HttpRequest& req) {
    if (req.target() == "/slow") {
      slow_started.set_value();
      (void)slow_may_end.WaitForNotificationWithTimeout(absl::Seconds(10));  // bounded: a failed test still ends
      slow_done = true;
    }
    return Echo(req);
  });
  ASSERT_NE(server, nullptr);

  Client idle(server->port());
  EXPECT_EQ(idle.RoundTrip(Post("/filter", "warm")).body(), "warm");
  Client busy(server->port());
  ASSERT_FALSE(busy.Write(Post("/slow", "in flight")));
  ASSERT_EQ(slow_started.get_future().wait_for(kIoTimeout), std::future_status::ready);

  server->Drain();

  // The idle keep-alive connection is closed while the slow request still runs.
  std::string received;
  EXPECT_TRUE(idle.ClosedWithin(kIoTimeout, &received));
  EXPECT_EQ(received, "");
  EXPECT_FALSE(slow_done.load());

  Client late(server->port());
  EXPECT_EQ(late.connect_error(), net::error::connection_refused);

  slow_may_end.Notify();
  HttpResponse res;
  ASSERT_FALSE(busy.Read(res));
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), "in flight");
  EXPECT_FALSE(res.keep_alive());  // Connection: close
  EXPECT_TRUE(busy.ClosedWithin(kIoTimeout));

  auto waited = std::async(std::launch::async, [&] { server->Wait(); });
  EXPECT_EQ(waited.wait_for(kIoTimeout), std::future_status::ready);
}

TEST(HttpServerTest, DrainTimeoutStopsWithARequestStillInFlight) {
  HttpServerOptions options = TestOptions();
  options.drain_timeout = milliseconds(50);
  std::promise<void> started;
  auto server = MustStart(options, [&](const HttpRequest& req) {
    started.set_value();
    // A handler slower than the drain timeout is the case under test: the
    // drain gives up on it (scripts/check_test_sleeps.sh lists this delay).
    constexpr milliseconds kSlowerThanTheDrainTimeout{200};
    std::this_thread::sleep_for(kSlowerThanTheDrainTimeout);
    return Echo(req);
  });
  ASSERT_NE(server, nullptr);
  Client busy(server->port());
  ASSERT_FALSE(busy.Write(Post("/slow", "x")));
  ASSERT_EQ(started.get_future().wait_for(kIoTimeout), std::future_status::ready);
  server->Drain();
  auto waited = std::async(std::launch::async, [&] { server->Wait(); });
  EXPECT_EQ(waited.wait_for(kIoTimeout), std::future_status::ready);
}

TEST(HttpServerTest, DrainWithNothingOpenReturnsPromptly) {
  auto server = MustStart(TestOptions());
  ASSERT_NE(server, nullptr);
  server->Drain();
  server->Drain();  // idempotent
  auto waited = std::async(std::launch::async, [&] { server->Wait(); });
  EXPECT_EQ(waited.wait_for(kIoTimeout), std::future_status::ready);
  server->Wait();  // again: returns at once
}

TEST(HttpServerTest, AConnectionPastTheCapIsClosedAndAFreedSlotServesTheNext) {
  HttpServerOptions options = TestOptions();
  options.max_connections = 2;
  auto server = MustStart(options);
  ASSERT_NE(server, nullptr);
  Client first(server->port());
  std::optional<Client> second(std::in_place, server->port());
  // An answer each: both sessions are registered by then.
  EXPECT_EQ(first.RoundTrip(Post("/a", "1")).body(), "1");
  EXPECT_EQ(second->RoundTrip(Post("/b", "2")).body(), "2");

  Client third(server->port());
  ASSERT_FALSE(third.connect_error());
  EXPECT_TRUE(third.ClosedWithin(kIoTimeout));
  EXPECT_EQ(first.RoundTrip(Post("/a", "again")).body(), "again");

  // The second goes away; once the server has seen it go (nothing tells
  // when), a new one is served.
  second.reset();
  EXPECT_TRUE(testing::Eventually(
      [&] {
        Client next(server->port());
        HttpResponse res;
        return !next.Write(Post("/c", "3")) && !next.Read(res) && res.body() == "3";
      },
      absl::FromChrono(kIoTimeout), "a new connection to be served in the freed slot"));
}

TEST(HttpServerTest, BodiesPastTheServerWideBudgetGet503UntilTheBudgetFrees) {
  HttpServerOptions options = TestOptions();
  options.body_limit = 1000;
  options.max_body_bytes_in_flight = 1000;
  auto server = MustStart(options);
  ASSERT_NE(server, nullptr);
  // A slow upload holds 800 of the 1000 bytes from its header on. It asks
  // for a 100 Continue, which the server sends once it has read the header
  // and reserved them: then the rest of the test may rely on their being held.
  Client slow(server->port());
  ASSERT_FALSE(slow.WriteRaw("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 800\r\nExpect: 100-continue\r\n\r\n"));
  ASSERT_THAT(slow.ReadHead(), StartsWith("HTTP/1.1 100 Continue"));
  ASSERT_FALSE(slow.WriteRaw(std::string(100, 'a')));

  Client busy(server->port());
  const HttpResponse refused = busy.RoundTrip(Post("/busy", std::string(300, 'b')));
  EXPECT_EQ(refused.result(), http::status::service_unavailable);
  EXPECT_EQ(refused[http::field::retry_after], "1");
  EXPECT_THAT(refused.body(), HasSubstr("server busy: request bodies in flight would exceed 1000 bytes"));
  EXPECT_TRUE(busy.ClosedWithin(kIoTimeout));
  // What fits is served meanwhile.
  Client small(server->port());
  EXPECT_EQ(small.RoundTrip(Post("/small", std::string(150, 'c'))).result(), http::status::ok);

  ASSERT_FALSE(slow.WriteRaw(std::string(700, 'a')));
  HttpResponse done;
  ASSERT_FALSE(slow.Read(done));
  EXPECT_EQ(done.body(), std::string(800, 'a'));
  // Answered, its share is free again: once the server has seen its write
  // complete, which may be just after the client read it.
  const auto deadline = Clock::now() + kIoTimeout;
  http::status after = http::status::service_unavailable;
  while (after == http::status::service_unavailable && Clock::now() < deadline) {
    Client next(server->port());
    after = next.RoundTrip(Post("/after", std::string(900, 'd'))).result();
  }
  EXPECT_EQ(after, http::status::ok);
}

TEST(HttpServerTest, AnAnswerKeepsItsRequestsShareOfTheBudgetUntilItIsWritten) {
  MetricsRegistry metrics;
  HttpServerOptions options = TestOptions();
  options.body_limit = 1000;
  options.max_body_bytes_in_flight = 1000;
  options.metrics = &metrics;
  // "/big" answers 64 MiB, more than the sockets' buffers take: its write
  // stays pending while its client does not read.
  std::promise<void> handled;
  auto server = MustStart(options, [&](const HttpRequest& req) {
    HttpResponse res = Echo(req);
    if (req.target() == "/big") {
      res.body() = std::string(size_t{64} << 20, 'x');
      handled.set_value();
    }
    return res;
  });
  ASSERT_NE(server, nullptr);
  Client reader(server->port(), milliseconds(30000));
  ASSERT_FALSE(reader.Write(Post("/big", std::string(800, 'a'))));
  ASSERT_EQ(handled.get_future().wait_for(kIoTimeout), std::future_status::ready);

  // Its 800 bytes stay reserved while its answer is being written.
  Client busy(server->port());
  EXPECT_EQ(busy.RoundTrip(Post("/busy", std::string(300, 'b'))).result(), http::status::service_unavailable);
  EXPECT_THAT(metrics.Render(), HasSubstr("tessera_http_rejections_total{reason=\"body_budget\"} 1\n"));

  HttpResponse big;
  ASSERT_FALSE(reader.Read(big));
  EXPECT_EQ(big.body().size(), size_t{64} << 20);
  const auto deadline = Clock::now() + kIoTimeout;
  http::status after = http::status::service_unavailable;
  while (after == http::status::service_unavailable && Clock::now() < deadline) {
    Client next(server->port());
    after = next.RoundTrip(Post("/after", std::string(300, 'd'))).result();
  }
  EXPECT_EQ(after, http::status::ok);
}

TEST(HttpServerTest, RefusedConnectionsAndRequestsAreCounted) {
  MetricsRegistry metrics;
  HttpServerOptions options = TestOptions();
  options.max_connections = 1;
  options.body_limit = 1000;
  options.metrics = &metrics;
  auto server = MustStart(options);
  ASSERT_NE(server, nullptr);
  {
    Client first(server->port());
    EXPECT_EQ(first.RoundTrip(Post("/a", "1")).body(), "1");
    Client second(server->port());
    EXPECT_TRUE(second.ClosedWithin(kIoTimeout));
  }
  const auto deadline = Clock::now() + kIoTimeout;
  http::status too_large = http::status::ok;
  while (too_large != http::status::payload_too_large && Clock::now() < deadline) {
    Client next(server->port());  // refused until the server has seen the first one go
    HttpResponse res;
    if (!next.Write(Post("/big", std::string(1001, 'x'))) && !next.Read(res)) too_large = res.result();
  }
  EXPECT_EQ(too_large, http::status::payload_too_large);
  const std::string text = metrics.Render();
  EXPECT_THAT(text, HasSubstr("tessera_http_rejections_total{reason=\"body_too_large\"} 1\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex("tessera_http_connections_refused_total [1-9]"));
}

TEST(HttpServerTest, StartReportsBindAndOptionErrorsAsStatus) {
  auto first = MustStart(TestOptions());
  ASSERT_NE(first, nullptr);
  HttpServerOptions taken = TestOptions();
  taken.port = first->port();
  auto second = HttpServer::Start(taken, Echo);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("cannot bind 127.0.0.1:"));

  HttpServerOptions bad_address = TestOptions();
  bad_address.address = "not-an-ip";
  EXPECT_EQ(HttpServer::Start(bad_address, Echo).status().code(), absl::StatusCode::kInvalidArgument);

  HttpServerOptions no_threads = TestOptions();
  no_threads.threads = 0;
  EXPECT_EQ(HttpServer::Start(no_threads, Echo).status().code(), absl::StatusCode::kInvalidArgument);
  HttpServerOptions no_connections = TestOptions();
  no_connections.max_connections = 0;
  EXPECT_EQ(HttpServer::Start(no_connections, Echo).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::Start(TestOptions(), nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- an AsyncHttpHandler: answers that come later, from other threads ---------------------------

// Holds the responders of "/slow" requests until Release(), as a worker pool
// holds binds waiting on the API server; answers everything else at once.
class HeldAnswers {
 public:
  AsyncHttpHandler Handler() {
    return [this](HttpRequest req, HttpResponder respond) {
      if (req.target() == "/throw") throw std::runtime_error("boom");
      if (req.target() != "/slow") return respond(Echo(req));
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back({std::move(req), std::move(respond)});
      changed_.notify_all();
    };
  }
  // True once `n` requests are held (false after kIoTimeout).
  bool WaitHeld(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, kIoTimeout, [&] { return held_.size() >= n; });
  }
  // Answers every held request with its echo, from a thread that is not an
  // io thread, as a pool's thread would.
  void Release() {
    std::vector<std::pair<HttpRequest, HttpResponder>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
    }
    std::thread([&] {
      for (auto& [req, respond] : held) respond(Echo(req));
    }).join();
  }
  // Forgets the held requests without answering them.
  void Drop() {
    std::lock_guard<std::mutex> lock(mu_);
    held_.clear();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::pair<HttpRequest, HttpResponder>> held_;
};

std::unique_ptr<HttpServer> MustStartAsync(HttpServerOptions options, AsyncHttpHandler handler) {
  auto server = HttpServer::StartAsync(std::move(options), std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

HttpRequest Get(std::string target) {
  HttpRequest req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  return req;
}

TEST(HttpServerAsyncTest, WhileMoreSlowRequestsWaitThanThereAreIoThreadsHealthzAndOthersAreAnswered) {
  HeldAnswers held;
  auto server = MustStartAsync(TestOptions(), held.Handler());  // 2 io threads
  ASSERT_NE(server, nullptr);
  constexpr int kSlow = 8;
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<Client>(server->port()));
    ASSERT_FALSE(slow.back()->Write(Post("/slow", "slow " + std::to_string(i))));
  }
  ASSERT_TRUE(held.WaitHeld(kSlow));

  // Every io thread is free: answered within the client's deadline, before
  // any slow request is.
  Client probe(server->port());
  const HttpResponse health = probe.RoundTrip(Get("/healthz"));
  EXPECT_EQ(health.result(), http::status::ok);
  EXPECT_EQ(probe.RoundTrip(Post("/filter", "fast")).body(), "fast");

  held.Release();
  for (int i = 0; i < kSlow; ++i) {
    HttpResponse res;
    ASSERT_FALSE(slow[static_cast<size_t>(i)]->Read(res));
    EXPECT_EQ(res.body(), "slow " + std::to_string(i));
    EXPECT_EQ(res[http::field::content_length], std::to_string(res.body().size())) << "filled in by the server";
    EXPECT_TRUE(res.keep_alive());
  }
  // The connection goes on after a late answer.
  EXPECT_EQ(slow[0]->RoundTrip(Post("/filter", "again")).body(), "again");
}

TEST(HttpServerAsyncTest, AnAnswerForAClientThatHasGoneIsDroppedAndTheServerServesOn) {
  HeldAnswers held;
  auto server = MustStartAsync(TestOptions(), held.Handler());
  ASSERT_NE(server, nullptr);
  {
    Client gone(server->port());
    ASSERT_FALSE(gone.Write(Post("/slow", "nobody reads this")));
    ASSERT_TRUE(held.WaitHeld(1));
  }  // closed before its answer
  held.Release();
  Client next(server->port());
  EXPECT_EQ(next.RoundTrip(Post("/filter", "still here")).body(), "still here");
}

TEST(HttpServerAsyncTest, DrainWaitsForAnswersStillToComeAndSendsThemWithConnectionClose) {
  HeldAnswers held;
  auto server = MustStartAsync(TestOptions(), held.Handler());
  ASSERT_NE(server, nullptr);
  Client busy(server->port());
  ASSERT_FALSE(busy.Write(Post("/slow", "in flight")));
  ASSERT_TRUE(held.WaitHeld(1));

  server->Drain();
  auto waited = std::async(std::launch::async, [&] { server->Wait(); });
  // The answer is still owed: the server does not stop under it.
  EXPECT_EQ(waited.wait_for(milliseconds(300)), std::future_status::timeout);

  held.Release();
  HttpResponse res;
  ASSERT_FALSE(busy.Read(res));
  EXPECT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res.body(), "in flight");
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(waited.wait_for(kIoTimeout), std::future_status::ready);
}

TEST(HttpServerAsyncTest, PastTheDrainTimeoutAnAnswerStillOwedIsCutAndALateAnswerDoesNothing) {
  HttpServerOptions options = TestOptions();
  options.drain_timeout = milliseconds(100);
  HeldAnswers held;
  auto server = MustStartAsync(options, held.Handler());
  ASSERT_NE(server, nullptr);
  Client busy(server->port());
  ASSERT_FALSE(busy.Write(Post("/slow", "never answered")));
  ASSERT_TRUE(held.WaitHeld(1));

  server->Drain();
  auto waited = std::async(std::launch::async, [&] { server->Wait(); });
  EXPECT_EQ(waited.wait_for(kIoTimeout), std::future_status::ready);
  server.reset();
  std::string received;
  EXPECT_TRUE(busy.ClosedWithin(kIoTimeout, &received));
  EXPECT_EQ(received, "") << "closed unanswered";
  held.Release();  // the server is gone: answering must touch nothing of it
}

TEST(HttpServerAsyncTest, AResponderDestroyedUnansweredAnswers500) {
  HeldAnswers held;
  auto server = MustStartAsync(TestOptions(), held.Handler());
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  ASSERT_FALSE(client.Write(Post("/slow", "lost")));
  ASSERT_TRUE(held.WaitHeld(1));
  held.Drop();
  HttpResponse res;
  ASSERT_FALSE(client.Read(res));
  EXPECT_EQ(res.result(), http::status::internal_server_error);
  EXPECT_EQ(res.body(), R"({"Error":"internal error: the request was dropped unanswered"})");
  EXPECT_EQ(client.RoundTrip(Post("/filter", "next")).body(), "next");
}

TEST(HttpServerAsyncTest, AThrowingHandlerGets500AndASecondAnswerIsIgnored) {
  auto server = MustStartAsync(TestOptions(), [](HttpRequest req, HttpResponder respond) {
    if (req.target() == "/throw") throw std::runtime_error("boom");
    respond(Echo(req));
    respond(Echo(Post("/twice", "second answer")));  // ignored
  });
  ASSERT_NE(server, nullptr);
  Client client(server->port());
  const HttpResponse thrown = client.RoundTrip(Post("/throw", "x"));
  EXPECT_EQ(thrown.result(), http::status::internal_server_error);
  EXPECT_EQ(thrown.body(), R"({"Error":"internal error: boom"})");
  // One answer per request: the next one on the connection gets its own.
  EXPECT_EQ(client.RoundTrip(Post("/filter", "first")).body(), "first");
  EXPECT_EQ(client.RoundTrip(Post("/filter", "third")).body(), "third");
}

TEST(JsonErrorResponseTest, EscapesTheReason) {
  HttpResponse res = JsonErrorResponse(http::status::not_found, "no route \"/x\"\n");
  EXPECT_EQ(res.result(), http::status::not_found);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(res.body(), R"({"Error":"no route \"/x\"\n"})");
  EXPECT_EQ(res[http::field::content_length], std::to_string(res.body().size()));
}

}  // namespace
}  // namespace tessera
