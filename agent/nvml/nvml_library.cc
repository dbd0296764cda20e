#include "agent/nvml/nvml_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::agent {

// The resolved entry points; null when the library lacks an optional one.
struct NvmlLibrary::Api {
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlDeviceGetCount_v2_fn count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn by_index = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetPciInfo_v3_fn pci = nullptr;
  nvmlDeviceGetTopologyCommonAncestor_fn common_ancestor = nullptr;
  // Optional: older drivers or other platforms lack some.
  nvmlDeviceGetMemoryAffinity_fn memory_affinity = nullptr;
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;
  nvmlDeviceGetNvLinkState_fn nvlink_state = nullptr;
  nvmlDeviceGetNvLinkRemotePciInfo_v2_fn nvlink_remote_pci = nullptr;
  nvmlDeviceGetNvLinkRemoteDeviceType_fn nvlink_remote_type = nullptr;
  nvmlDeviceGetRetiredPagesPendingStatus_fn retired_pending = nullptr;
  nvmlDeviceGetRemappedRows_fn remapped_rows = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig_devices = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_device_by_index = nullptr;
  nvmlDeviceGetGpuInstanceId_fn gpu_instance_id = nullptr;
  nvmlDeviceGetGpuInstanceById_fn gpu_instance_by_id = nullptr;
  nvmlGpuInstanceGetInfo_fn gpu_instance_info = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfo_fn gpu_instance_profile = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfoV_fn gpu_instance_profile_v = nullptr;
  nvmlEventSetCreate_fn event_set_create = nullptr;
  nvmlDeviceRegisterEvents_fn register_events = nullptr;
  nvmlEventSetWait_v2_fn event_set_wait = nullptr;
  nvmlEventSetFree_fn event_set_free = nullptr;
};

namespace {

// Payload-free marker of NVML_ERROR_GPU_IS_LOST: the only NVML code mapped to DataLoss.
constexpr absl::StatusCode kGpuLostCode = absl::StatusCode::kDataLoss;

std::string_view ReturnName(nvmlReturn_t r) {
  switch (r) {
    case NVML_ERROR_UNINITIALIZED: return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT: return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED: return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION: return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_NOT_FOUND: return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT: return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_GPU_IS_LOST: return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED: return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    default: return "NVML error";
  }
}

absl::StatusCode CodeOf(nvmlReturn_t r) {
  switch (r) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return absl::StatusCode::kUnimplemented;
    case NVML_ERROR_GPU_IS_LOST: return kGpuLostCode;
    case NVML_ERROR_TIMEOUT: return absl::StatusCode::kDeadlineExceeded;
    case NVML_ERROR_NOT_FOUND: return absl::StatusCode::kNotFound;
    case NVML_ERROR_INVALID_ARGUMENT: return absl::StatusCode::kInvalidArgument;
    case NVML_ERROR_NO_PERMISSION: return absl::StatusCode::kPermissionDenied;
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return absl::StatusCode::kFailedPrecondition;
    default: return absl::StatusCode::kInternal;
  }
}

template <typename Fn>
Fn Resolve(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

absl::Status Missing(std::string_view call) {
  return absl::UnimplementedError(absl::StrCat(Absl(call), " is not in this driver's NVML"));
}

// A NUL-terminated copy of a fixed buffer NVML filled.
std::string FromBuffer(const char* buffer, size_t size) {
  return std::string(buffer, std::find(buffer, buffer + size, '\0'));
}

// The entry points every driver since R450 exports; any missing one means
// this is not the NVML we know.
absl::Status ResolveRequired(void* handle, NvmlLibrary::Api& api, const std::string& path) {
  std::string missing;
  auto need = [&](auto& slot, const char* name) {
    slot = Resolve<std::remove_reference_t<decltype(slot)>>(handle, name);
    if (slot == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
  };
  need(api.init, "nvmlInit_v2");
  need(api.shutdown, "nvmlShutdown");
  need(api.error_string, "nvmlErrorString");
  need(api.count, "nvmlDeviceGetCount_v2");
  need(api.by_index, "nvmlDeviceGetHandleByIndex_v2");
  need(api.uuid, "nvmlDeviceGetUUID");
  need(api.name, "nvmlDeviceGetName");
  need(api.memory, "nvmlDeviceGetMemoryInfo");
  need(api.pci, "nvmlDeviceGetPciInfo_v3");
  need(api.common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "NVML at \"", path, "\" lacks ", missing, ": not NVIDIA's libnvidia-ml, or a driver older than R450"));
}

}  // namespace

bool IsGpuLost(const absl::Status& status) { return status.code() == kGpuLostCode; }


absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot load NVML from \"", path, "\": ", why != nullptr ? why : "unknown error",
        ". The NVIDIA driver's libnvidia-ml.so.1 must be visible to the agent: run it with the NVIDIA container "
        "toolkit (NVIDIA_VISIBLE_DEVICES=all, NVIDIA_DRIVER_CAPABILITIES=utility) or mount the driver's library "
        "folder and pass --nvml-library=<path>"));
  }
  auto api = std::make_unique<Api>();
  if (absl::Status st = ResolveRequired(handle, *api, path); !st.ok()) {
    dlclose(handle);
    return st;
  }
  Api& a = *api;
  a.driver_version = Resolve<nvmlSystemGetDriverVersion_fn>(handle, "nvmlSystemGetDriverVersion");
  a.memory_affinity = Resolve<nvmlDeviceGetMemoryAffinity_fn>(handle, "nvmlDeviceGetMemoryAffinity");
  a.mig_mode = Resolve<nvmlDeviceGetMigMode_fn>(handle, "nvmlDeviceGetMigMode");
  a.nvlink_state = Resolve<nvmlDeviceGetNvLinkState_fn>(handle, "nvmlDeviceGetNvLinkState");
  a.nvlink_remote_pci = Resolve<nvmlDeviceGetNvLinkRemotePciInfo_v2_fn>(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  a.nvlink_remote_type =
      Resolve<nvmlDeviceGetNvLinkRemoteDeviceType_fn>(handle, "nvmlDeviceGetNvLinkRemoteDeviceType");
  a.retired_pending =
      Resolve<nvmlDeviceGetRetiredPagesPendingStatus_fn>(handle, "nvmlDeviceGetRetiredPagesPendingStatus");
  a.remapped_rows = Resolve<nvmlDeviceGetRemappedRows_fn>(handle, "nvmlDeviceGetRemappedRows");
  a.max_mig_devices = Resolve<nvmlDeviceGetMaxMigDeviceCount_fn>(handle, "nvmlDeviceGetMaxMigDeviceCount");
  a.mig_device_by_index =
      Resolve<nvmlDeviceGetMigDeviceHandleByIndex_fn>(handle, "nvmlDeviceGetMigDeviceHandleByIndex");
  a.gpu_instance_id = Resolve<nvmlDeviceGetGpuInstanceId_fn>(handle, "nvmlDeviceGetGpuInstanceId");
  a.gpu_instance_by_id = Resolve<nvmlDeviceGetGpuInstanceById_fn>(handle, "nvmlDeviceGetGpuInstanceById");
  a.gpu_instance_info = Resolve<nvmlGpuInstanceGetInfo_fn>(handle, "nvmlGpuInstanceGetInfo");
  a.gpu_instance_profile =
      Resolve<nvmlDeviceGetGpuInstanceProfileInfo_fn>(handle, "nvmlDeviceGetGpuInstanceProfileInfo");
  a.gpu_instance_profile_v =
      Resolve<nvmlDeviceGetGpuInstanceProfileInfoV_fn>(handle, "nvmlDeviceGetGpuInstanceProfileInfoV");
  a.event_set_create = Resolve<nvmlEventSetCreate_fn>(handle, "nvmlEventSetCreate");
  a.register_events = Resolve<nvmlDeviceRegisterEvents_fn>(handle, "nvmlDeviceRegisterEvents");
  a.event_set_wait = Resolve<nvmlEventSetWait_v2_fn>(handle, "nvmlEventSetWait_v2");
  a.event_set_free = Resolve<nvmlEventSetFree_fn>(handle, "nvmlEventSetFree");
  return std::unique_ptr<NvmlLibrary>(new NvmlLibrary(path, handle, std::move(api)));
}

NvmlLibrary::NvmlLibrary(std::string path, void* handle, std::unique_ptr<Api> api)
    : path_(std::move(path)), handle_(handle), api_(std::move(api)) {}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_) api_->shutdown();
  dlclose(handle_);
}

absl::Status NvmlLibrary::Check(nvmlReturn_t result, std::string_view call) const {
  if (result == NVML_SUCCESS) return absl::OkStatus();
  const char* text = api_->error_string(result);
  return absl::Status(CodeOf(result), absl::StrCat(Absl(call), ": ", text != nullptr ? text : "(no message)", " (",
                                                   Absl(ReturnName(result)), " = ", result, ")"));
}

absl::Status NvmlLibrary::Init() {
  absl::Status st = Check(api_->init(), "nvmlInit_v2");
  initialised_ = st.ok();
  return st;
}

absl::StatusOr<std::string> NvmlLibrary::DriverVersion() {
  if (api_->driver_version == nullptr) return Missing("nvmlSystemGetDriverVersion");
  char buffer[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (absl::Status st = Check(api_->driver_version(buffer, sizeof buffer), "nvmlSystemGetDriverVersion"); !st.ok()) {
    return st;
  }
  return FromBuffer(buffer, sizeof buffer);
}

absl::StatusOr<unsigned int> NvmlLibrary::DeviceCount() {
  unsigned int count = 0;
  if (absl::Status st = Check(api_->count(&count), "nvmlDeviceGetCount_v2"); !st.ok()) return st;
  return count;
}

absl::StatusOr<nvmlDevice_t> NvmlLibrary::DeviceByIndex(unsigned int index) {
  nvmlDevice_t device = nullptr;
  if (absl::Status st = Check(api_->by_index(index, &device), absl::StrCat("nvmlDeviceGetHandleByIndex_v2(", index, ")"));
      !st.ok()) {
    return st;
  }
  return device;
}

absl::StatusOr<std::string> NvmlLibrary::Uuid(nvmlDevice_t device) {
  char buffer[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (absl::Status st = Check(api_->uuid(device, buffer, sizeof buffer), "nvmlDeviceGetUUID"); !st.ok()) return st;
  return FromBuffer(buffer, sizeof buffer);
}

absl::StatusOr<std::string> NvmlLibrary::Name(nvmlDevice_t device) {
  char buffer[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (absl::Status st = Check(api_->name(device, buffer, sizeof buffer), "nvmlDeviceGetName"); !st.ok()) return st;
  return FromBuffer(buffer, sizeof buffer);
}

absl::StatusOr<uint64_t> NvmlLibrary::MemoryTotalBytes(nvmlDevice_t device) {
  nvmlMemory_t memory{};
  if (absl::Status st = Check(api_->memory(device, &memory), "nvmlDeviceGetMemoryInfo"); !st.ok()) return st;
  return memory.total;
}

absl::StatusOr<nvmlPciInfo_t> NvmlLibrary::PciInfo(nvmlDevice_t device) {
  nvmlPciInfo_t pci{};
  if (absl::Status st = Check(api_->pci(device, &pci), "nvmlDeviceGetPciInfo_v3"); !st.ok()) return st;
  return pci;
}

absl::StatusOr<std::optional<int32_t>> NvmlLibrary::NumaNode(nvmlDevice_t device) {
  if (api_->memory_affinity == nullptr) return Missing("nvmlDeviceGetMemoryAffinity");
  // 64 nodes per unsigned long; four cover every machine there is.
  constexpr unsigned int kWords = 4;
  unsigned long nodes[kWords] = {};
  if (absl::Status st = Check(api_->memory_affinity(device, kWords, nodes, NVML_AFFINITY_SCOPE_NODE),
                              "nvmlDeviceGetMemoryAffinity");
      !st.ok()) {
    return st;
  }
  std::optional<int32_t> found;
  for (unsigned int w = 0; w < kWords; ++w) {
    for (int bit = 0; bit < 64; ++bit) {
      if ((nodes[w] >> bit & 1UL) == 0) continue;
      if (found.has_value()) return std::optional<int32_t>();  // several nodes: none is the GPU's
      found = static_cast<int32_t>(w * 64 + static_cast<unsigned int>(bit));
    }
  }
  return found;
}

absl::StatusOr<bool> NvmlLibrary::MigEnabled(nvmlDevice_t device) {
  if (api_->mig_mode == nullptr) return Missing("nvmlDeviceGetMigMode");
  unsigned int current = 0, pending = 0;
  if (absl::Status st = Check(api_->mig_mode(device, &current, &pending), "nvmlDeviceGetMigMode"); !st.ok()) return st;
  return current == NVML_DEVICE_MIG_ENABLE;
}

absl::StatusOr<unsigned int> NvmlLibrary::MaxMigDevices(nvmlDevice_t parent) {
  if (api_->max_mig_devices == nullptr) return Missing("nvmlDeviceGetMaxMigDeviceCount");
  unsigned int count = 0;
  if (absl::Status st = Check(api_->max_mig_devices(parent, &count), "nvmlDeviceGetMaxMigDeviceCount"); !st.ok()) {
    return st;
  }
  return count;
}

absl::StatusOr<std::optional<nvmlDevice_t>> NvmlLibrary::MigDeviceByIndex(nvmlDevice_t parent, unsigned int index) {
  if (api_->mig_device_by_index == nullptr) return Missing("nvmlDeviceGetMigDeviceHandleByIndex");
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t r = api_->mig_device_by_index(parent, index, &device);
  if (r == NVML_ERROR_NOT_FOUND) return std::optional<nvmlDevice_t>();
  if (absl::Status st = Check(r, absl::StrCat("nvmlDeviceGetMigDeviceHandleByIndex(", index, ")")); !st.ok()) {
    return st;
  }
  return std::optional<nvmlDevice_t>(device);
}

absl::StatusOr<unsigned int> NvmlLibrary::GpuInstanceId(nvmlDevice_t mig_device) {
  if (api_->gpu_instance_id == nullptr) return Missing("nvmlDeviceGetGpuInstanceId");
  unsigned int id = 0;
  if (absl::Status st = Check(api_->gpu_instance_id(mig_device, &id), "nvmlDeviceGetGpuInstanceId"); !st.ok()) {
    return st;
  }
  return id;
}

absl::StatusOr<nvmlGpuInstanceInfo_t> NvmlLibrary::GpuInstanceInfo(nvmlDevice_t parent, unsigned int id) {
  if (api_->gpu_instance_by_id == nullptr) return Missing("nvmlDeviceGetGpuInstanceById");
  if (api_->gpu_instance_info == nullptr) return Missing("nvmlGpuInstanceGetInfo");
  nvmlGpuInstance_t instance = nullptr;
  if (absl::Status st = Check(api_->gpu_instance_by_id(parent, id, &instance),
                              absl::StrCat("nvmlDeviceGetGpuInstanceById(", id, ")"));
      !st.ok()) {
    return st;
  }
  nvmlGpuInstanceInfo_t info{};
  if (absl::Status st = Check(api_->gpu_instance_info(instance, &info), "nvmlGpuInstanceGetInfo"); !st.ok()) return st;
  return info;
}

absl::StatusOr<GpuInstanceProfile> NvmlLibrary::GpuInstanceProfileById(nvmlDevice_t parent, unsigned int profile_id) {
  if (api_->gpu_instance_profile == nullptr) return Missing("nvmlDeviceGetGpuInstanceProfileInfo");
  for (unsigned int size = 0; size < NVML_GPU_INSTANCE_PROFILE_COUNT; ++size) {
    nvmlGpuInstanceProfileInfo_t info{};
    const nvmlReturn_t r = api_->gpu_instance_profile(parent, size, &info);
    // Sizes this GPU does not offer, or this driver does not know.
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (absl::Status st = Check(r, absl::StrCat("nvmlDeviceGetGpuInstanceProfileInfo(", size, ")")); !st.ok()) {
      return st;
    }
    if (info.id != profile_id) continue;
    GpuInstanceProfile profile{.id = info.id, .slice_count = info.sliceCount, .memory_mib = info.memorySizeMB};
    if (api_->gpu_instance_profile_v != nullptr) {
      nvmlGpuInstanceProfileInfo_v2_t named{};
      named.version = nvmlGpuInstanceProfileInfo_v2;
      if (api_->gpu_instance_profile_v(parent, size, &named) == NVML_SUCCESS && named.id == profile_id) {
        std::string name = FromBuffer(named.name, sizeof named.name);
        constexpr std::string_view kPrefix = "MIG ";
        if (name.compare(0, kPrefix.size(), kPrefix) == 0) name.erase(0, kPrefix.size());
        profile.name = std::move(name);
      }
    }
    return profile;
  }
  return absl::NotFoundError(absl::StrCat("no GPU instance profile of this GPU has id ", profile_id));
}

absl::StatusOr<bool> NvmlLibrary::NvLinkActive(nvmlDevice_t device, unsigned int link) {
  if (api_->nvlink_state == nullptr) return Missing("nvmlDeviceGetNvLinkState");
  nvmlEnableState_t active = NVML_FEATURE_DISABLED;
  if (absl::Status st = Check(api_->nvlink_state(device, link, &active), absl::StrCat("nvmlDeviceGetNvLinkState(", link, ")"));
      !st.ok()) {
    return st;
  }
  return active == NVML_FEATURE_ENABLED;
}

absl::StatusOr<nvmlPciInfo_t> NvmlLibrary::NvLinkRemotePci(nvmlDevice_t device, unsigned int link) {
  if (api_->nvlink_remote_pci == nullptr) return Missing("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  nvmlPciInfo_t pci{};
  if (absl::Status st = Check(api_->nvlink_remote_pci(device, link, &pci),
                              absl::StrCat("nvmlDeviceGetNvLinkRemotePciInfo_v2(", link, ")"));
      !st.ok()) {
    return st;
  }
  return pci;
}

absl::StatusOr<nvmlIntNvLinkDeviceType_t> NvmlLibrary::NvLinkRemoteType(nvmlDevice_t device, unsigned int link) {
  if (api_->nvlink_remote_type == nullptr) return Missing("nvmlDeviceGetNvLinkRemoteDeviceType");
  nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  if (absl::Status st = Check(api_->nvlink_remote_type(device, link, &type),
                              absl::StrCat("nvmlDeviceGetNvLinkRemoteDeviceType(", link, ")"));
      !st.ok()) {
    return st;
  }
  return type;
}

absl::StatusOr<nvmlGpuTopologyLevel_t> NvmlLibrary::CommonAncestor(nvmlDevice_t a, nvmlDevice_t b) {
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  if (absl::Status st = Check(api_->common_ancestor(a, b, &level), "nvmlDeviceGetTopologyCommonAncestor"); !st.ok()) {
    return st;
  }
  return level;
}

absl::StatusOr<bool> NvmlLibrary::RetiredPagesPending(nvmlDevice_t device) {
  if (api_->retired_pending == nullptr) return Missing("nvmlDeviceGetRetiredPagesPendingStatus");
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  if (absl::Status st = Check(api_->retired_pending(device, &pending), "nvmlDeviceGetRetiredPagesPendingStatus");
      !st.ok()) {
    return st;
  }
  return pending == NVML_FEATURE_ENABLED;
}

absl::StatusOr<RemappedRows> NvmlLibrary::Remapped(nvmlDevice_t device) {
  if (api_->remapped_rows == nullptr) return Missing("nvmlDeviceGetRemappedRows");
  unsigned int correctable = 0, uncorrectable = 0, pending = 0, failure = 0;
  if (absl::Status st = Check(api_->remapped_rows(device, &correctable, &uncorrectable, &pending, &failure),
                              "nvmlDeviceGetRemappedRows");
      !st.ok()) {
    return st;
  }
  return RemappedRows{.correctable = correctable, .uncorrectable = uncorrectable, .pending = pending != 0,
                      .failure_occurred = failure != 0};
}

absl::StatusOr<nvmlEventSet_t> NvmlLibrary::CreateEventSet() {
  if (api_->event_set_create == nullptr || api_->register_events == nullptr || api_->event_set_wait == nullptr ||
      api_->event_set_free == nullptr) {
    return Missing("the event API (nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait_v2)");
  }
  nvmlEventSet_t set = nullptr;
  if (absl::Status st = Check(api_->event_set_create(&set), "nvmlEventSetCreate"); !st.ok()) return st;
  return set;
}

absl::Status NvmlLibrary::RegisterXidEvents(nvmlDevice_t device, nvmlEventSet_t set) {
  return Check(api_->register_events(device, nvmlEventTypeXidCriticalError, set), "nvmlDeviceRegisterEvents");
}

absl::StatusOr<std::optional<XidEvent>> NvmlLibrary::WaitXid(nvmlEventSet_t set, absl::Duration timeout) {
  nvmlEventData_t data{};
  const auto ms = static_cast<unsigned int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 0, 1 << 30));
  const nvmlReturn_t r = api_->event_set_wait(set, &data, ms);
  if (r == NVML_ERROR_TIMEOUT) return std::optional<XidEvent>();
  if (absl::Status st = Check(r, "nvmlEventSetWait_v2"); !st.ok()) return st;
  if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) return std::optional<XidEvent>();
  return std::optional<XidEvent>(XidEvent{.device = data.device, .xid = data.eventData});
}

void NvmlLibrary::FreeEventSet(nvmlEventSet_t set) {
  if (set != nullptr && api_->event_set_free != nullptr) api_->event_set_free(set);
}

}  // namespace tessera::agent
