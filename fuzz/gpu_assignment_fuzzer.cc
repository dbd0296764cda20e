// The `tessera.io/gpu-assignment` pod annotation (k8s/gpu_assignment.h): what
// every pod holds, read by the watch from objects anyone may write.
//
// Property: anything ParseGpuAssignment accepts survives FormatGpuAssignment
// and a second parse unchanged (the header promises the round trip).
//
// The same bytes as `tessera.io/visible-devices` (k8s/visible_devices.h),
// read back when the assignment is unreadable: what parses stays within its
// bounds and parses the same once joined again.
#include "absl/strings/str_join.h"
#include "fuzz/fuzz_input.h"
#include "k8s/gpu_assignment.h"
#include "k8s/visible_devices.h"

namespace {

void CheckVisibleDevices(std::string_view text) {
  using namespace tessera;
  absl::StatusOr<std::vector<k8s::VisibleDevice>> devices = k8s::ParseVisibleDevices(text);
  if (!devices.ok()) return;
  if (devices->empty() || devices->size() > k8s::kMaxVisibleDevices) fuzz::Violated("visible devices out of bounds");
  std::vector<std::string> names;
  for (const k8s::VisibleDevice& d : *devices) {
    if (d.uuid.size() > k8s::kMaxVisibleDeviceName) fuzz::Violated("a visible device name past its bound");
    names.push_back(d.uuid.empty() ? std::to_string(d.index) : d.uuid);
  }
  absl::StatusOr<std::vector<k8s::VisibleDevice>> again = k8s::ParseVisibleDevices(absl::StrJoin(names, ","));
  if (!again.ok() || *again != *devices) fuzz::Violated("visible devices changed through a join and a parse");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  CheckVisibleDevices(fuzz::AsText(data, size));
  absl::StatusOr<GpuAssignment> parsed = k8s::ParseGpuAssignment(fuzz::AsText(data, size));
  if (!parsed.ok()) return 0;
  const std::string text = k8s::FormatGpuAssignment(*parsed);
  absl::StatusOr<GpuAssignment> again = k8s::ParseGpuAssignment(text);
  if (!again.ok()) fuzz::Violated("a formatted assignment does not parse");
  if (!(*again == *parsed)) fuzz::Violated("an assignment changed through Format and Parse");
  (void)k8s::FormatVisibleDevices(*parsed);
  return 0;
}
