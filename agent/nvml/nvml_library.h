// NVML loaded at run time: dlopen("libnvidia-ml.so.1"), the entry points
// resolved with dlsym, every call turned into an absl::Status that names the
// call and NVML's own words for what went wrong.
//
// Why at run time: the agent image must start on any node (the driver's
// library comes from the host, through the NVIDIA container toolkit or a
// hostPath), and a build must not need CUDA. A node without the library gets
// one clear error, not a loader failure before main().
//
// Status codes: NVML_ERROR_NOT_SUPPORTED is Unimplemented (a feature this GPU
// lacks: the caller carries on without it); NVML_ERROR_GPU_IS_LOST is
// DataLoss, and only it (IsGpuLost); NVML_ERROR_TIMEOUT is DeadlineExceeded;
// the rest follow their meaning (NotFound, InvalidArgument, PermissionDenied,
// FailedPrecondition for a driver that is not loaded, Internal otherwise).
//
// Not thread-safe by itself; the agent calls it from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/nvml/nvml_api.h"

namespace tessera::agent {

/// Where the library is looked for when neither --nvml-library nor
/// $TESSERA_NVML_LIBRARY names one: the loader's search path, as every NVML
/// user does (the container toolkit puts it there).
inline constexpr std::string_view kDefaultNvmlLibrary = "libnvidia-ml.so.1";

/// nvmlDeviceGetRemappedRows' answer (Ampere and later).
struct RemappedRows {
  unsigned int correctable = 0;
  unsigned int uncorrectable = 0;
  bool pending = false;           ///< A remapping waits for a GPU reset.
  bool failure_occurred = false;  ///< A remapping failed: the memory cannot be repaired.
};

/// One XID event.
struct XidEvent {
  nvmlDevice_t device = nullptr;
  uint64_t xid = 0;
};

/// A GPU instance profile as its parent GPU describes it.
struct GpuInstanceProfile {
  unsigned int id = 0;           ///< What nvmlGpuInstanceInfo_t::profileId calls it.
  unsigned int slice_count = 0;  ///< Compute slices: the "3" of 3g.40gb.
  uint64_t memory_mib = 0;       ///< What an instance holds (a little under the name's).
  /// NVML's name less its "MIG " ("3g.40gb", "1g.10gb+me"); empty when the
  /// driver predates nvmlDeviceGetGpuInstanceProfileInfoV or it failed.
  std::string name{};
};

/// True when `status` came from NVML_ERROR_GPU_IS_LOST (the GPU fell off the bus).
bool IsGpuLost(const absl::Status& status);

class NvmlLibrary {
 public:
  /// Loads `path` and resolves the entry points; does not initialise NVML.
  /// FailedPrecondition when the library cannot be loaded (the message says
  /// how to make it visible) or lacks an entry point every supported driver has.
  static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Load(const std::string& path);
  /// Shuts NVML down (when Init succeeded) and unloads the library.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  /// nvmlInit_v2. Call once before anything below.
  absl::Status Init();

  [[nodiscard]] const std::string& path() const { return path_; }
  absl::StatusOr<std::string> DriverVersion();
  absl::StatusOr<unsigned int> DeviceCount();
  absl::StatusOr<nvmlDevice_t> DeviceByIndex(unsigned int index);
  absl::StatusOr<std::string> Uuid(nvmlDevice_t device);
  absl::StatusOr<std::string> Name(nvmlDevice_t device);
  absl::StatusOr<uint64_t> MemoryTotalBytes(nvmlDevice_t device);
  absl::StatusOr<nvmlPciInfo_t> PciInfo(nvmlDevice_t device);
  /// The NUMA node nearest the GPU (nvmlDeviceGetMemoryAffinity, NODE scope):
  /// nullopt when the answer names no node or several.
  absl::StatusOr<std::optional<int32_t>> NumaNode(nvmlDevice_t device);
  /// The current MIG mode.
  absl::StatusOr<bool> MigEnabled(nvmlDevice_t device);

  /// MIG, on a GPU in MIG mode. Each is Unimplemented when the driver lacks it.
  /// How many MIG devices (compute instances) the GPU may hold: the slots below.
  absl::StatusOr<unsigned int> MaxMigDevices(nvmlDevice_t parent);
  /// The MIG device in slot `index`; nullopt for an empty slot (NVML_ERROR_NOT_FOUND).
  absl::StatusOr<std::optional<nvmlDevice_t>> MigDeviceByIndex(nvmlDevice_t parent, unsigned int index);
  /// The GPU instance a MIG device belongs to.
  absl::StatusOr<unsigned int> GpuInstanceId(nvmlDevice_t mig_device);
  /// GPU instance `id` of `parent`: its profile id and placement
  /// (nvmlDeviceGetGpuInstanceById, then nvmlGpuInstanceGetInfo).
  absl::StatusOr<nvmlGpuInstanceInfo_t> GpuInstanceInfo(nvmlDevice_t parent, unsigned int id);
  /// The profile GPU instances report as `profile_id`: NVML is asked for
  /// each of its profile sizes (NVML_GPU_INSTANCE_PROFILE_*) and the one with
  /// that id answers; NotFound when none has it.
  absl::StatusOr<GpuInstanceProfile> GpuInstanceProfileById(nvmlDevice_t parent, unsigned int profile_id);

  absl::StatusOr<bool> NvLinkActive(nvmlDevice_t device, unsigned int link);
  absl::StatusOr<nvmlPciInfo_t> NvLinkRemotePci(nvmlDevice_t device, unsigned int link);
  /// What the link reaches; Unimplemented when the driver predates the call
  /// (R460), and then the caller decides by the remote's PCI address.
  absl::StatusOr<nvmlIntNvLinkDeviceType_t> NvLinkRemoteType(nvmlDevice_t device, unsigned int link);
  absl::StatusOr<nvmlGpuTopologyLevel_t> CommonAncestor(nvmlDevice_t a, nvmlDevice_t b);

  /// Pages waiting to be retired at the next reset (Volta and older).
  absl::StatusOr<bool> RetiredPagesPending(nvmlDevice_t device);
  absl::StatusOr<RemappedRows> Remapped(nvmlDevice_t device);

  /// XID events: a set, a device registered into it, a wait of at most `timeout`.
  absl::StatusOr<nvmlEventSet_t> CreateEventSet();
  absl::Status RegisterXidEvents(nvmlDevice_t device, nvmlEventSet_t set);
  /// nullopt when nothing arrived in time.
  absl::StatusOr<std::optional<XidEvent>> WaitXid(nvmlEventSet_t set, absl::Duration timeout);
  void FreeEventSet(nvmlEventSet_t set);

 /// The resolved entry points (opaque; nvml_library.cc).
  struct Api;

 private:
  NvmlLibrary(std::string path, void* handle, std::unique_ptr<Api> api);
  /// The status of one call: OK, or the call's name, NVML's message and the code's name.
  absl::Status Check(nvmlReturn_t result, std::string_view call) const;

  std::string path_;
  void* handle_;
  std::unique_ptr<Api> api_;
  bool initialised_ = false;
};

}  // namespace tessera::agent
