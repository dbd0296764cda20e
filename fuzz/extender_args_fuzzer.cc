// Filter and prioritize requests (k8s/extender_args.h), in both node forms
// (NodeNames for nodeCacheCapable, full Nodes otherwise), answered by the
// service over the demo cluster under two policies: the decoder, the pod's
// GPU and host requests, node inventories and topologies from full Node
// objects, every plugin, and the encoder.
//
// Properties: every answer is valid JSON; it stays within a fixed multiple of
// its request (no reason copied per node without bound); no reason or Error
// holds a '%' (kube-scheduler would read it as a format verb); the one-pass
// decoder calls a body malformed exactly when simdjson's parse of the whole
// body fails (it used to parse it whole; k8s/internal/json_scan.h).
#include <simdjson.h>

#include "absl/strings/match.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_service.h"
#include "k8s/extender_args.h"

namespace {

using tessera::fuzz::Violated;

void CheckNoPercent(simdjson::dom::element text) {
  std::string_view s;
  if (text.get(s) == simdjson::SUCCESS && s.find('%') != std::string_view::npos) Violated("a '%' in a reason");
}

void CheckAnswer(const absl::StatusOr<std::string>& answer, size_t request_size) {
  if (!answer.ok()) return;  // a 400 with the decoder's reason
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(*answer).get(doc) != simdjson::SUCCESS) Violated("the answer is not JSON");
  if (answer->size() > (size_t{64} << 10) + 64 * request_size) Violated("the answer is more than 64 times the request");
  simdjson::dom::object filter;
  if (doc.get(filter) != simdjson::SUCCESS) return;  // prioritize: a list of scores
  for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
    simdjson::dom::object reasons;
    if (filter[key].get(reasons) != simdjson::SUCCESS) Violated("a filter answer without its reason maps");
    for (auto [node, reason] : reasons) CheckNoPercent(reason);
  }
  CheckNoPercent(filter["Error"]);
}

void CheckSyntaxAsSimdjson(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return;  // "empty", not malformed
  static simdjson::dom::parser* const whole = new simdjson::dom::parser();
  static simdjson::dom::parser* const parser = new simdjson::dom::parser();
  const bool valid = whole->parse(body.data(), body.size(), /*realloc_if_needed=*/true).error() == simdjson::SUCCESS;
  const absl::StatusOr<tessera::k8s::ExtenderArgs> args = tessera::k8s::DecodeExtenderArgs(body, *parser);
  const bool malformed = !args.ok() && absl::StartsWith(args.status().message(), "malformed JSON");
  if (valid && malformed) Violated("the decoder calls JSON that simdjson parses malformed");
  if (!valid && !malformed) Violated("the decoder does not call malformed JSON that simdjson refuses");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tessera::fuzz::FuzzService;
  static FuzzService* const fgd = new FuzzService("default-policy.yaml");
  static FuzzService* const topology = new FuzzService("topology-policy.yaml");
  const std::string_view body = tessera::fuzz::AsText(data, size);
  CheckSyntaxAsSimdjson(body);
  for (FuzzService* s : {fgd, topology}) {
    CheckAnswer(s->service().Filter(body), size);
    CheckAnswer(s->service().Prioritize(body), size);
  }
  return 0;
}
