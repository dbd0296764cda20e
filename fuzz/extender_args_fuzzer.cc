// Filter and prioritize requests (k8s/extender_args.h), in both node forms
// (NodeNames for nodeCacheCapable, full Nodes otherwise), answered by the
// service over the demo cluster under two policies: the decoder, the pod's
// GPU and host requests, node inventories and topologies from full Node
// objects, every plugin, and the encoder.
//
// Properties: every answer is valid JSON, and an answer stays within a fixed
// multiple of its request (no reason copied per node without bound).
#include <simdjson.h>

#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_service.h"

namespace {

void CheckAnswer(const absl::StatusOr<std::string>& answer, size_t request_size) {
  if (!answer.ok()) return;  // a 400 with the decoder's reason
  simdjson::dom::parser parser;
  if (parser.parse(*answer).error() != simdjson::SUCCESS) tessera::fuzz::Violated("the answer is not JSON");
  if (answer->size() > (size_t{64} << 10) + 64 * request_size) {
    tessera::fuzz::Violated("the answer is more than 64 times the request");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tessera::fuzz::FuzzService;
  static FuzzService* const fgd = new FuzzService("default-policy.yaml");
  static FuzzService* const topology = new FuzzService("topology-policy.yaml");
  const std::string_view body = tessera::fuzz::AsText(data, size);
  for (FuzzService* s : {fgd, topology}) {
    CheckAnswer(s->service().Filter(body), size);
    CheckAnswer(s->service().Prioritize(body), size);
  }
  return 0;
}
