// The HTTP request parser exactly as a server connection sets it up
// (extender/server/http_parse.h: limits, the answers to what it refuses),
// then the router over the demo cluster, as the server would call it.
//
// The limits are the server's defaults but for the body, capped so that a
// fuzz input can cross it. Properties: a request read is within the limits;
// a refusal is one of 400, 413, 431 with a JSON reason.
#include "extender/server/http_parse.h"
#include "extender/service/router.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_service.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  namespace http = boost::beast::http;
  static fuzz::FuzzService* const service = new fuzz::FuzzService("default-policy.yaml");
  static const Router* const router =
      new Router(RouterOptions{.url_prefix = "/scheduler"}, service->service(), service->metrics());
  HttpServerOptions options;
  options.body_limit = 2048;
  options.header_limit = 1024;

  std::string_view bytes = fuzz::AsText(data, size);
  // Pipelined requests, as a keep-alive connection reads them.
  for (int i = 0; i < 4 && !bytes.empty(); ++i) {
    ParsedRequest parsed = ParseHttpRequest(bytes, options);
    if (parsed.rejection) {
      const unsigned code = parsed.rejection->result_int();
      if (code != 400 && code != 413 && code != 431) fuzz::Violated("a refusal that is not 400, 413 or 431");
      if (parsed.rejection->body().rfind("{\"Error\":", 0) != 0) fuzz::Violated("a refusal without a JSON reason");
      return 0;
    }
    if (!parsed.request) return 0;  // cut short: the server closes silently
    if (parsed.request->body().size() > options.body_limit) fuzz::Violated("a body over the limit was read");
    if (parsed.consumed == 0 || parsed.consumed > bytes.size()) fuzz::Violated("a request consumed no bytes");
    (void)router->Handle(*parsed.request);
    bytes.remove_prefix(parsed.consumed);
  }
  return 0;
}
