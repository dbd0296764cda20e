// HTTP/2 connections of HttpServer: TLS connections whose handshake chose
// "h2" by ALPN (HttpServerOptions::http2). One connection carries every
// request at once, each on its own stream, answered in any order as its
// handler answers; the H2Connection (h2_connection.h) does the protocol.
#pragma once

#include <memory>

#include <openssl/ssl.h>

#include "extender/server/server_core.h"

namespace tessera::http_internal {

/// Makes a server context offer HTTP/2 and HTTP/1.1 by ALPN, h2 first: a
/// client that offers neither (or none) gets HTTP/1.1 without ALPN.
void OfferHttp2(net::ssl::context& ctx);

/// Whether the finished handshake on `ssl` chose HTTP/2.
[[nodiscard]] bool NegotiatedHttp2(SSL* ssl);

/// Serves HTTP/2 on `stream`, whose TLS handshake is done, until the peer
/// goes, the server drains or a deadline passes. `tls` is the context the
/// stream was made with (kept alive with it); `client_verified` whether the
/// client presented a certificate the client CA verified. On the stream's
/// strand.
void StartHttp2Session(TlsStream stream, std::shared_ptr<net::ssl::context> tls, ServerCore& server,
                       bool client_verified);

}  // namespace tessera::http_internal
