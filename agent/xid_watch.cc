#include "agent/xid_watch.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::agent {

std::set<uint64_t> ApplicationXids() { return {13, 31, 43, 45, 68, 109}; }

std::string XidReason(uint64_t xid) {
  // The XIDs a broken GPU reports most (NVIDIA's "XID Errors" catalogue).
  std::string_view what;
  switch (xid) {
    case 48: what = "double-bit ECC error"; break;
    case 62: what = "internal micro-controller halt"; break;
    case 63: what = "ECC page retirement or row remapping recorded"; break;
    case 64: what = "ECC page retirement or row remapping failed"; break;
    case 74: what = "NVLink error"; break;
    case 79: what = "GPU has fallen off the bus"; break;
    case 92: what = "high single-bit ECC error rate"; break;
    case 94: what = "contained ECC error"; break;
    case 95: what = "uncontained ECC error"; break;
    case 119: what = "GSP RPC timeout"; break;
    case 120: what = "GSP error"; break;
    default: what = "critical error reported by the driver"; break;
  }
  return absl::StrCat("XID ", xid, " (", Absl(what), ")");
}

absl::StatusOr<std::unique_ptr<XidWatch>> XidWatch::Start(NvmlLibrary& nvml, std::set<uint64_t> ignored_xids,
                                                          std::vector<std::string>& notes) {
  absl::StatusOr<nvmlEventSet_t> set = nvml.CreateEventSet();
  if (!set.ok()) return set.status();
  auto watch = std::unique_ptr<XidWatch>(new XidWatch(nvml, *set, std::move(ignored_xids)));
  absl::StatusOr<unsigned int> count = nvml.DeviceCount();
  if (!count.ok()) return count.status();
  for (unsigned int i = 0; i < *count; ++i) {
    absl::StatusOr<nvmlDevice_t> device = nvml.DeviceByIndex(i);
    absl::StatusOr<std::string> uuid = device.ok() ? nvml.Uuid(*device) : device.status();
    absl::Status st = uuid.ok() ? nvml.RegisterXidEvents(*device, *set) : uuid.status();
    if (!st.ok()) {
      notes.push_back(absl::StrCat("GPU ", i, ": no XID events: ", st.message()));
      continue;
    }
    watch->uuids_[*device] = *uuid;
  }
  return watch;
}

XidWatch::~XidWatch() { nvml_.FreeEventSet(set_); }

absl::StatusOr<std::optional<BrokenGpu>> XidWatch::Wait(absl::Duration timeout) {
  absl::StatusOr<std::optional<XidEvent>> event = nvml_.WaitXid(set_, timeout);
  if (!event.ok()) return event.status();
  if (!event->has_value() || ignored_.count((*event)->xid) > 0) return std::optional<BrokenGpu>();
  auto known = uuids_.find((*event)->device);
  if (known == uuids_.end()) return std::optional<BrokenGpu>();  // not a GPU we registered
  return std::optional<BrokenGpu>(BrokenGpu{.uuid = known->second, .reason = XidReason((*event)->xid)});
}

}  // namespace tessera::agent
