#include "telemetry/prometheus_client.h"

#include <chrono>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// RFC 3986 unreserved characters stay; everything else is %XX.
void AppendPercentEncoded(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
}

// One query: resolve, connect, write, read, all under one deadline. Runs on
// its own io_context, on the calling thread.
class Exchange {
 public:
  Exchange(asio::io_context& io, const PrometheusEndpoint& endpoint, std::string target, absl::Duration timeout)
      : endpoint_(endpoint), resolver_(io), socket_(io), deadline_(io), timeout_(timeout) {
    request_ = http::request<http::empty_body>(http::verb::get, target, 11);  // HTTP/1.1
    const bool ipv6 = endpoint.host.find(':') != std::string::npos;
    request_.set(http::field::host, ipv6 ? absl::StrCat("[", endpoint.host, "]:", endpoint.port)
                                         : absl::StrCat(endpoint.host, ":", endpoint.port));
    request_.set(http::field::user_agent, "tessera-extender");
    request_.set(http::field::accept, "application/json");
    request_.keep_alive(false);
    parser_.emplace();
    parser_->body_limit(PrometheusClient::kMaxBodyBytes);
  }

  void Start() {
    deadline_.expires_after(std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout_)));
    deadline_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || done_) return;
      Finish(absl::DeadlineExceededError(
          absl::StrCat("no answer from Prometheus at ", Where(), " within ", absl::FormatDuration(timeout_))));
    });
    resolver_.async_resolve(endpoint_.host, std::to_string(endpoint_.port),
                            [this](const boost::system::error_code& ec, tcp::resolver::results_type results) {
                              if (ec) return Fail("cannot resolve", ec);
                              asio::async_connect(socket_, results,
                                                  [this](const boost::system::error_code& ec, const tcp::endpoint&) {
                                                    if (ec) return Fail("cannot connect to", ec);
                                                    Write();
                                                  });
                            });
  }

  [[nodiscard]] absl::StatusOr<PrometheusAnswer> Result() {
    if (!result_.has_value()) return absl::CancelledError("the Prometheus query was cancelled");
    return *std::move(result_);
  }

 private:
  void Write() {
    http::async_write(socket_, request_, [this](const boost::system::error_code& ec, size_t) {
      if (ec) return Fail("cannot send the query to", ec);
      http::async_read(socket_, buffer_, *parser_, [this](const boost::system::error_code& ec, size_t) {
        if (ec == http::error::body_limit) {
          return Finish(absl::ResourceExhaustedError(absl::StrCat(
              "the answer of Prometheus at ", Where(), " is larger than ", PrometheusClient::kMaxBodyBytes, " bytes")));
        }
        if (ec) return Fail("cannot read the answer of", ec);
        auto& message = parser_->get();
        Finish(PrometheusAnswer{.status = static_cast<int>(message.result_int()), .body = std::move(message.body())});
      });
    });
  }

  [[nodiscard]] std::string Where() const { return absl::StrCat(endpoint_.host, ":", endpoint_.port); }

  void Fail(std::string_view what, const boost::system::error_code& ec) {
    Finish(absl::UnavailableError(absl::StrCat(Absl(what), " Prometheus at ", Where(), ": ", ec.message())));
  }

  // The first outcome wins; closing the socket ends the others' handlers.
  void Finish(absl::StatusOr<PrometheusAnswer> result) {
    if (done_) return;
    done_ = true;
    result_ = std::move(result);
    boost::system::error_code ignored;
    deadline_.cancel();
    resolver_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  const PrometheusEndpoint& endpoint_;
  tcp::resolver resolver_;
  tcp::socket socket_;
  asio::steady_timer deadline_;
  const absl::Duration timeout_;
  http::request<http::empty_body> request_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  bool done_ = false;
  std::optional<absl::StatusOr<PrometheusAnswer>> result_;
};

}  // namespace

std::string PrometheusClient::QueryTarget(std::string_view promql) const {
  std::string target = absl::StrCat(endpoint_.path_prefix, "/api/v1/query?query=");
  AppendPercentEncoded(target, promql);
  return target;
}

absl::StatusOr<PrometheusAnswer> PrometheusClient::Query(std::string_view promql) {
  asio::io_context io;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return absl::CancelledError("the Prometheus client was cancelled");
    in_flight_ = &io;
  }
  Exchange exchange(io, endpoint_, QueryTarget(promql), timeout_);
  exchange.Start();
  io.run();  // returns when the exchange finished, or at once after Cancel()'s stop()
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ = nullptr;
  }
  return exchange.Result();
}

void PrometheusClient::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (in_flight_ != nullptr) in_flight_->stop();
}

}  // namespace tessera
