// Bind and preempt requests (k8s/extender_args.h): ExtenderBindingArgs and
// ExtenderPreemptionArgs in both victims forms.
#include <simdjson.h>

#include "fuzz/fuzz_input.h"
#include "k8s/extender_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static simdjson::dom::parser* const parser = new simdjson::dom::parser();
  const std::string_view body = fuzz::AsText(data, size);
  absl::StatusOr<k8s::ExtenderBindingArgs> bind = k8s::DecodeBindingArgs(body, *parser);
  if (bind.ok() && (bind->pod_name.empty() || bind->pod_namespace.empty() || bind->pod_uid.empty() ||
                    bind->node.empty())) {
    fuzz::Violated("a bind request with an empty field was accepted");
  }
  (void)k8s::DecodePreemptionArgs(body, *parser);
  return 0;
}
