#include "k8s/internal/json.h"

namespace tessera::k8s::internal {

simdjson::simdjson_result<simdjson::dom::element> ParseJson(std::string_view json) {
  // One parser per thread: parsers are not thread-safe, and reusing one keeps
  // its tape and padded input buffer allocated across requests.
  thread_local simdjson::dom::parser parser;
  return parser.parse(json.data(), json.size(), /*realloc_if_needed=*/true);
}

std::optional<int64_t> AsInt64(simdjson::dom::element element) {
  int64_t value = 0;
  if (element.get_int64().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

}  // namespace tessera::k8s::internal
