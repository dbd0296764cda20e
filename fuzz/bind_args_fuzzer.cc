// Bind and preempt requests (k8s/extender_args.h): ExtenderBindingArgs and
// ExtenderPreemptionArgs in both victims forms, and the preempt verb's
// answer over the demo cluster (extender/service/preempt_verb.h).
#include <simdjson.h>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_service.h"
#include "k8s/extender_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static simdjson::dom::parser* const parser = new simdjson::dom::parser();
  static fuzz::FuzzService* const service = new fuzz::FuzzService("default-policy.yaml");
  const std::string_view body = fuzz::AsText(data, size);
  absl::StatusOr<k8s::ExtenderBindingArgs> bind = k8s::DecodeBindingArgs(body, *parser);
  if (bind.ok() && (bind->pod_name.empty() || bind->pod_namespace.empty() || bind->pod_uid.empty() ||
                    bind->node.empty())) {
    fuzz::Violated("a bind request with an empty field was accepted");
  }
  const bool decodes = k8s::DecodePreemptionArgs(body, *parser).ok();
  absl::StatusOr<std::string> answer = service->service().Preempt(body);
  if (answer.ok() != decodes) fuzz::Violated("preempt answered what does not decode, or refused what does");
  if (answer.ok()) {
    const nlohmann::json doc = nlohmann::json::parse(*answer, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc["NodeNameToMetaVictims"].is_object()) {
      fuzz::Violated("preempt answered something other than an ExtenderPreemptionResult");
    }
  }
  return 0;
}
