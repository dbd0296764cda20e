// The few parts of NVML's C API the node agent calls, declared here from
// NVIDIA's public API reference (docs.nvidia.com/deploy/nvml-api): nvml.h is
// not in the Debian archive this project builds from (only non-free), and the
// agent must build without CUDA anyway. The library itself is loaded at run
// time (nvml_library.h), so nothing here is linked.
//
// Types and values are NVIDIA's ABI: the same sizes, field order and
// constants as nvml.h (R450 and later). The static_asserts below pin the
// struct layouts the reference gives; a mistake in them would make the
// library write past our buffers. The versioned entry points (_v2, _v3) are
// the ones nvml.h maps the plain names to: the symbol name is part of the ABI.
#pragma once

#include <cstddef>

extern "C" {

using nvmlReturn_t = int;  // an enum in nvml.h: int-sized
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND = 12;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
inline constexpr nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;

using nvmlEnableState_t = int;  // NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1
inline constexpr nvmlEnableState_t NVML_FEATURE_DISABLED = 0;
inline constexpr nvmlEnableState_t NVML_FEATURE_ENABLED = 1;

/// nvmlDeviceGetMigMode's modes.
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

/// Buffer sizes nvml.h defines for nvmlDeviceGetUUID / nvmlDeviceGetName
/// (the _V2 sizes: large enough for every GPU and MIG device).
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

/// Links a GPU may have: 6 on V100, 12 on A100, 18 on H100 (nvml.h's value
/// grew with each generation; a link past the GPU's count answers
/// NVML_ERROR_INVALID_ARGUMENT or NOT_SUPPORTED, which ends the scan).
inline constexpr unsigned int NVML_NVLINK_MAX_LINKS = 18;

/// nvmlMemory_t (v1): bytes.
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

/// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 and nvmlDeviceGetNvLinkRemotePciInfo_v2 fill it.
struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];  ///< "0000:07:00.0" (old 16-byte form)
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     ///< device id << 16 | vendor id (0x10de)
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  ///< "00000000:07:00.0"
};

/// nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs on PCIe.
using nvmlGpuTopologyLevel_t = int;
inline constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_INTERNAL = 0;     // one board (e.g. K80)
inline constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_SINGLE = 10;      // one PCIe switch: PIX
inline constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_MULTIPLE = 20;    // several switches: PXB
inline constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_HOSTBRIDGE = 30;  // a host bridge: PHB
inline constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_NODE = 40;        // host bridges of a NUMA node: NODE
inline constexpr nvmlGpuTopologyLevel_t NVML_TOPOLOGY_SYSTEM = 50;      // across sockets: SYS

/// nvmlIntNvLinkDeviceType_t: what is at the other end of an NVLink.
using nvmlIntNvLinkDeviceType_t = int;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_GPU = 0x00;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF;

using nvmlAffinityScope_t = unsigned int;
inline constexpr nvmlAffinityScope_t NVML_AFFINITY_SCOPE_NODE = 0;

/// nvmlEventTypeXidCriticalError: the event mask bit of XID errors.
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;

/// MIG: a GPU instance, the handle nvmlDeviceGetGpuInstanceById gives.
struct nvmlGpuInstance_st;
using nvmlGpuInstance_t = nvmlGpuInstance_st*;

/// The GPU instance profiles nvmlDeviceGetGpuInstanceProfileInfo takes: an
/// enumeration of sizes, not the profile id a GPU instance reports
/// (nvmlGpuInstanceInfo_t::profileId is nvmlGpuInstanceProfileInfo_t::id,
/// e.g. 9 for an A100's 3g.40gb, asked for as NVML_GPU_INSTANCE_PROFILE_3_SLICE).
/// R470's ten; later drivers add more (GFX, NO_ME, ALL_ME) past these, which
/// a driver that lacks them answers NVML_ERROR_INVALID_ARGUMENT.
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0x0;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_2_SLICE = 0x1;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_3_SLICE = 0x2;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_4_SLICE = 0x3;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_7_SLICE = 0x4;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_8_SLICE = 0x5;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_6_SLICE = 0x6;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7;  ///< 1g with media extensions (+me)
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x8;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 0x9;  ///< 1g with twice the memory (1g.20gb)
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_COUNT = 0xA;

/// Where a GPU instance sits: its first memory slice and how many it spans.
struct nvmlGpuInstancePlacement_t {
  unsigned int start;
  unsigned int size;
};

/// nvmlGpuInstanceInfo_t as nvmlGpuInstanceGetInfo fills it.
struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;  ///< The parent GPU.
  unsigned int id;      ///< The GPU instance id, unique within the parent.
  unsigned int profileId;  ///< nvmlGpuInstanceProfileInfo_t::id of its profile.
  nvmlGpuInstancePlacement_t placement;
};

/// nvmlGpuInstanceProfileInfo_t as nvmlDeviceGetGpuInstanceProfileInfo fills it.
struct nvmlGpuInstanceProfileInfo_t {
  unsigned int id;  ///< The profile id GPU instances report.
  unsigned int isP2pSupported;
  unsigned int sliceCount;  ///< Compute slices: the "3" of 3g.40gb.
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;  ///< MiB, a little under the name's: 40192 for a "40gb".
};

/// nvmlGpuInstanceProfileInfo_v2_t, nvmlDeviceGetGpuInstanceProfileInfoV's
/// (newer drivers than the plain call): the same with a version first and the profile's name
/// last ("MIG 3g.40gb", as `nvidia-smi mig -lgip` prints it).
struct nvmlGpuInstanceProfileInfo_v2_t {
  unsigned int version;  ///< nvmlGpuInstanceProfileInfo_v2
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
};

/// NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2): the size, and the version in the top byte.
inline constexpr unsigned int nvmlGpuInstanceProfileInfo_v2 =
    static_cast<unsigned int>(sizeof(nvmlGpuInstanceProfileInfo_v2_t)) | (2U << 24U);

/// nvmlEventData_t as nvmlEventSetWait_v2 fills it.
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  ///< The XID, for an XID event.
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// The entry points, by the signatures of the reference.
using nvmlInit_v2_fn = nvmlReturn_t (*)();
using nvmlShutdown_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t);
using nvmlSystemGetDriverVersion_fn = nvmlReturn_t (*)(char*, unsigned int);
using nvmlDeviceGetCount_v2_fn = nvmlReturn_t (*)(unsigned int*);
using nvmlDeviceGetHandleByIndex_v2_fn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using nvmlDeviceGetUUID_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetName_fn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using nvmlDeviceGetMemoryInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetPciInfo_v3_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using nvmlDeviceGetMemoryAffinity_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, unsigned long*,
                                                        nvmlAffinityScope_t);
using nvmlDeviceGetMigMode_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using nvmlDeviceGetNvLinkState_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlEnableState_t*);
using nvmlDeviceGetNvLinkRemotePciInfo_v2_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
using nvmlDeviceGetNvLinkRemoteDeviceType_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                nvmlIntNvLinkDeviceType_t*);
using nvmlDeviceGetTopologyCommonAncestor_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t*);
using nvmlDeviceGetRetiredPagesPendingStatus_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlEnableState_t*);
using nvmlDeviceGetRemappedRows_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*,
                                                      unsigned int*);
using nvmlDeviceGetMaxMigDeviceCount_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetMigDeviceHandleByIndex_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlDevice_t*);
using nvmlDeviceGetGpuInstanceId_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using nvmlDeviceGetGpuInstanceById_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t*);
using nvmlGpuInstanceGetInfo_fn = nvmlReturn_t (*)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
using nvmlDeviceGetGpuInstanceProfileInfo_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                nvmlGpuInstanceProfileInfo_t*);
using nvmlDeviceGetGpuInstanceProfileInfoV_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                 nvmlGpuInstanceProfileInfo_v2_t*);
using nvmlEventSetCreate_fn = nvmlReturn_t (*)(nvmlEventSet_t*);
using nvmlDeviceRegisterEvents_fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
using nvmlEventSetWait_v2_fn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using nvmlEventSetFree_fn = nvmlReturn_t (*)(nvmlEventSet_t);

}  // extern "C"

// The layouts of the reference (x86-64 and aarch64 alike: LP64).
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(offsetof(nvmlPciInfo_t, domain) == 16);
static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32);
static_assert(offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(offsetof(nvmlEventData_t, eventData) == 16);
static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24);
static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
static_assert(offsetof(nvmlGpuInstanceInfo_t, placement) == 16);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB) == 48);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, name) == 56);
static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x2000098);  // pynvml's 33554584
