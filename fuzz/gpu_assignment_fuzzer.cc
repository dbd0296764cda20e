// The `tessera.io/gpu-assignment` pod annotation (k8s/gpu_assignment.h): what
// every pod holds, read by the watch from objects anyone may write.
//
// Property: anything ParseGpuAssignment accepts survives FormatGpuAssignment
// and a second parse unchanged (the header promises the round trip).
#include "fuzz/fuzz_input.h"
#include "k8s/gpu_assignment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  absl::StatusOr<GpuAssignment> parsed = k8s::ParseGpuAssignment(fuzz::AsText(data, size));
  if (!parsed.ok()) return 0;
  const std::string text = k8s::FormatGpuAssignment(*parsed);
  absl::StatusOr<GpuAssignment> again = k8s::ParseGpuAssignment(text);
  if (!again.ok()) fuzz::Violated("a formatted assignment does not parse");
  if (!(*again == *parsed)) fuzz::Violated("an assignment changed through Format and Parse");
  (void)k8s::FormatVisibleDevices(*parsed);
  return 0;
}
