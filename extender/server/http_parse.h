// How the server reads one request's bytes, without a socket: the parser's
// settings, and the answer to what it cannot read. The sessions of
// http_server.cc use exactly these, so tests and the fuzzer (fuzz/) exercise
// the parsing the server does.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <boost/beast/http/parser.hpp>
#include <boost/system/error_code.hpp>

#include "extender/server/http_server.h"

namespace tessera {

/// The parser one request is read with; a fresh one per request.
using HttpRequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

/// Sets `options`' body and header limits on a fresh parser.
void ConfigureRequestParser(HttpRequestParser& parser, const HttpServerOptions& options);

/// The answer to a request that failed to parse with `ec`: 413 (body limit),
/// 431 (header limit) or 400 (malformed HTTP), each with a JSON reason; the
/// server closes the connection after it. nullopt where nobody is left to
/// answer (the peer went away, a timeout, a message cut short by EOF): then
/// the server just closes.
std::optional<HttpResponse> RejectionFor(const boost::system::error_code& ec, const HttpServerOptions& options);

/// One request read from `bytes` as a connection reads it (the same parser
/// settings), with the end of `bytes` as the end of the stream.
struct ParsedRequest {
  std::optional<HttpRequest> request;     ///< Set when a whole request was read.
  std::optional<HttpResponse> rejection;  ///< Set when the server would answer an error.
  size_t consumed = 0;                    ///< Bytes of `bytes` the request took (pipelining).
};
ParsedRequest ParseHttpRequest(std::string_view bytes, const HttpServerOptions& options);

}  // namespace tessera
