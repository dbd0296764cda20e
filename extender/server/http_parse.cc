#include "extender/server/http_parse.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "absl/strings/str_format.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;

bool IsHttpParseError(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

}  // namespace

void ConfigureRequestParser(HttpRequestParser& parser, const HttpServerOptions& options) {
  parser.body_limit(static_cast<std::uint64_t>(options.body_limit));
  parser.header_limit(options.header_limit);
}

std::optional<HttpResponse> RejectionFor(const boost::system::error_code& ec, const HttpServerOptions& options) {
  if (ec == http::error::body_limit) {
    return JsonErrorResponse(http::status::payload_too_large,
                             absl::StrFormat("request body exceeds the %d-byte limit", options.body_limit));
  }
  if (ec == http::error::header_limit) {
    return JsonErrorResponse(http::status::request_header_fields_too_large,
                             absl::StrFormat("request header exceeds the %d-byte limit", options.header_limit));
  }
  if (IsHttpParseError(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return JsonErrorResponse(http::status::bad_request, absl::StrFormat("malformed HTTP request: %s", ec.message()));
  }
  return std::nullopt;
}

ParsedRequest ParseHttpRequest(std::string_view bytes, const HttpServerOptions& options) {
  ParsedRequest out;
  HttpRequestParser parser;
  ConfigureRequestParser(parser, options);
  // Header and body in one go, as http::read does after read_header.
  parser.eager(true);
  boost::system::error_code ec;
  while (!parser.is_done()) {
    const std::string_view rest = bytes.substr(out.consumed);
    const size_t used = rest.empty() ? 0 : parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    out.consumed += used;
    if (ec == http::error::need_more) ec = {};
    if (ec) break;
    // No progress: Beast waits for bytes that will never come. (put_eof
    // asserts that some came: with none, the stream simply ended.)
    if (used == 0) {
      if (!parser.got_some()) {
        ec = http::error::end_of_stream;
      } else {
        parser.put_eof(ec);
        if (!ec && !parser.is_done()) ec = http::error::partial_message;
      }
      break;
    }
  }
  if (ec) {
    out.rejection = RejectionFor(ec, options);
    return out;
  }
  out.request = parser.release();
  return out;
}

}  // namespace tessera
