// A blocking HTTP/1.1 client over a real socket, for integration tests.
#pragma once

#include <chrono>
#include <string>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tessera::testing {

struct HttpAnswer {
  int status = 0;  ///< 0: the connection failed or closed without an answer.
  std::string body;
  std::string content_type;
  std::string allow;
};

/// One keep-alive connection to 127.0.0.1:port. Each exchange is bounded by
/// `timeout`: past it the connection is closed and the answer has status 0,
/// so a server that does not answer fails a test instead of hanging it.
class HttpClient {
 public:
  explicit HttpClient(uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(60))
      : socket_(io_), timeout_(timeout) {
    boost::system::error_code ec;
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    connected_ = !ec;
  }

  [[nodiscard]] bool connected() const { return connected_; }

  HttpAnswer Send(boost::beast::http::verb method, const std::string& target, const std::string& body = "") {
    namespace http = boost::beast::http;
    HttpAnswer answer;
    if (!connected_) return answer;
    http::request<http::string_body> req(method, target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::user_agent, "Go-http-client/1.1");
    if (method == http::verb::post) req.set(http::field::content_type, "application/json");
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    http::response_parser<http::string_body> parser;
    parser.body_limit(size_t{1} << 30);
    boost::system::error_code ec;
    bool done = false;
    http::async_write(socket_, req, [&](boost::system::error_code wrote, size_t) {
      if (wrote) {
        ec = wrote;
        done = true;
        return;
      }
      http::async_read(socket_, buffer_, parser, [&](boost::system::error_code read, size_t) {
        ec = read;
        done = true;
      });
    });
    io_.restart();
    io_.run_for(timeout_);
    if (!done) {
      // Too late: close, and let the aborted operations finish before their
      // captures go out of scope.
      socket_.close(ec);
      io_.restart();
      io_.run();
      connected_ = false;
      return answer;
    }
    if (ec) return answer;
    const auto& res = parser.get();
    answer.status = res.result_int();
    answer.body = res.body();
    answer.content_type = std::string(res[http::field::content_type]);
    answer.allow = std::string(res[http::field::allow]);
    return answer;
  }

  HttpAnswer Post(const std::string& target, const std::string& body) {
    return Send(boost::beast::http::verb::post, target, body);
  }
  HttpAnswer Get(const std::string& target) { return Send(boost::beast::http::verb::get, target); }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds timeout_;
  bool connected_ = false;
};

}  // namespace tessera::testing
