#include "k8s/visible_devices.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "k8s/annotations.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

absl::Status Invalid(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("annotation ", Absl(kVisibleDevices), ": ", why));
}

bool IsUuidChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

}  // namespace

absl::StatusOr<std::vector<VisibleDevice>> ParseVisibleDevices(std::string_view text) {
  std::vector<VisibleDevice> out;
  bool by_index = false;
  for (absl::string_view item : absl::StrSplit(Absl(text), ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (out.size() == kMaxVisibleDevices) return Invalid(absl::StrCat("more than ", kMaxVisibleDevices, " devices"));
    if (item.empty()) return Invalid("an empty device name");
    if (item.size() > kMaxVisibleDeviceName) {
      return Invalid(absl::StrCat("a device name longer than ", kMaxVisibleDeviceName, " bytes"));
    }
    VisibleDevice device;
    if (absl::ascii_isdigit(static_cast<unsigned char>(item.front()))) {
      if (item.size() > 4 || !absl::SimpleAtoi(item, &device.index)) {
        return Invalid(absl::StrCat("\"", item, "\" is not a device index"));
      }
    } else {
      if (!std::all_of(item.begin(), item.end(), IsUuidChar)) {
        return Invalid(absl::StrCat("\"", item, "\" is neither a device index nor a UUID"));
      }
      device.uuid = std::string(item);
    }
    if (!out.empty() && by_index != device.uuid.empty()) return Invalid("a mix of UUIDs and device indices");
    by_index = device.uuid.empty();
    if (std::find(out.begin(), out.end(), device) != out.end()) {
      return Invalid(absl::StrCat("\"", item, "\" is named twice"));
    }
    out.push_back(std::move(device));
  }
  return out;
}

absl::StatusOr<GpuAssignment> AssignmentFromVisibleDevices(std::string_view text, std::string_view node,
                                                           absl::Span<const GpuDevice> gpus,
                                                           const PodGpuRequest* request) {
  absl::StatusOr<std::vector<VisibleDevice>> devices = ParseVisibleDevices(text);
  if (!devices.ok()) return devices.status();
  GpuAssignment assignment;
  assignment.node = std::string(node);
  for (const VisibleDevice& d : *devices) {
    const auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const GpuDevice& g) {
      return d.uuid.empty() ? g.index == d.index : g.uuid == d.uuid;
    });
    const std::string name = d.uuid.empty() ? absl::StrCat("device ", d.index) : d.uuid;
    if (gpu == gpus.end()) {
      return absl::FailedPreconditionError(absl::StrCat(name, " is not a GPU of node ", Absl(node)));
    }
    if (gpu->mig_mode) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, " of node ", Absl(node), " is in MIG mode: which instance the pod holds is not written"));
    }
    GpuShare share;
    share.index = gpu->index;
    share.uuid = gpu->uuid;
    const bool whole = request == nullptr || request->whole_gpu;
    share.guaranteed = whole ? kOneGpu : request->guaranteed;
    share.limit = whole ? kOneGpu : request->limit;
    share.memory = whole ? gpu->memory : request->memory;
    share.memory_limit = whole ? gpu->memory : std::max(request->memory_limit, request->memory);
    assignment.gpus.push_back(std::move(share));
  }
  if (assignment.gpus.empty()) return absl::FailedPreconditionError("no device named");
  return assignment;
}

}  // namespace tessera::k8s
