// A fake libnvidia-ml: the NVML entry points the node agent calls, exported
// under their real (versioned) names from a shared library the agent dlopens
// as it would the driver's. It describes one of a few reference machines,
// chosen by environment variables read at nvmlInit_v2:
//
//   FAKE_NVML_MACHINE    dgx1-v100  8 V100-SXM2-16GB, hybrid cube-mesh (NV1/NV2 direct GPU links,
//                                   test/testing/topologies.h's kDgx1V100), 2 NUMA nodes
//                        dgx-a100   8 A100-SXM4-80GB, each with 12 NVLinks to 6 NVSwitches
//                                   (2 per switch), NUMA 3,3,1,1,7,7,5,5
//                        pcie-8     8 L40S on PCIe only: PIX pairs, NODE within a socket,
//                                   SYS across (kPcie8TwoSockets)
//                        none       a node whose driver sees no GPU
//   FAKE_NVML_UNHEALTHY  "3,5": these GPUs report unrecoverable memory from the start (a failed
//                        row remapping on A100/L40S, pages pending retirement on V100)
//   FAKE_NVML_MIG        "7": these GPUs run in MIG mode (A100 only: others answer NOT_SUPPORTED)
//   FAKE_NVML_INIT_ERROR an nvmlReturn_t nvmlInit_v2 answers instead of success, e.g. 9
//                        (NVML_ERROR_DRIVER_NOT_LOADED)
//   FAKE_NVML_CONTROL    a file the test appends lines to while the agent runs, re-read by
//                        every nvmlEventSetWait_v2 and nvmlDeviceGetHandleByIndex_v2:
//                          xid <gpu> <code>   an XID event on that GPU (delivered once, in order)
//                          lost <gpu>         the GPU fell off the bus: NVML_ERROR_GPU_IS_LOST
//
// Unknown machines make nvmlInit_v2 fail with NVML_ERROR_UNKNOWN (and say so
// on stderr), so a typo cannot pass for a machine without GPUs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/nvml/nvml_api.h"

// The handles NVML gives out are opaque pointers; ours point at these.
struct nvmlDevice_st {
  int index = 0;
};
struct nvmlEventSet_st {
  std::set<int> devices;  // registered for XID events
};

namespace {

enum class Peer { kNone, kGpu, kSwitch };

struct Link {
  Peer peer = Peer::kNone;
  int remote = 0;  // GPU index or switch number
};

struct FakeGpu {
  std::string name;
  unsigned long long memory_bytes = 0;
  unsigned int bus = 0;
  int numa = 0;
  bool mig_capable = false;
  bool row_remapping = false;  // Ampere and later; else page retirement
  std::vector<Link> links{};
};

struct Machine {
  std::vector<FakeGpu> gpus;
  std::vector<std::vector<nvmlGpuTopologyLevel_t>> pcie;  // [i][j]
};

// test/testing/topologies.h's kDgx1V100: NVLinks between GPU i and j.
constexpr int kDgx1Links[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
    {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

constexpr unsigned long long kMiB = 1ULL << 20;

std::vector<std::vector<nvmlGpuTopologyLevel_t>> Pcie(int n, auto level) {
  std::vector<std::vector<nvmlGpuTopologyLevel_t>> m(n, std::vector<nvmlGpuTopologyLevel_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) m[i][j] = i == j ? NVML_TOPOLOGY_INTERNAL : level(i, j);
  }
  return m;
}

Machine Dgx1V100() {
  Machine m;
  const unsigned int buses[8] = {0x06, 0x07, 0x0a, 0x0b, 0x85, 0x86, 0x89, 0x8a};
  for (int i = 0; i < 8; ++i) {
    FakeGpu g{.name = "Tesla V100-SXM2-16GB", .memory_bytes = 16160 * kMiB, .bus = buses[i], .numa = i < 4 ? 0 : 1};
    for (int j = 0; j < 8; ++j) {
      for (int l = 0; l < kDgx1Links[i][j]; ++l) g.links.push_back({Peer::kGpu, j});
    }
    m.gpus.push_back(g);
  }
  m.pcie = Pcie(8, [](int i, int j) {
    if (i / 4 != j / 4) return NVML_TOPOLOGY_SYSTEM;
    return i / 2 == j / 2 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_NODE;
  });
  return m;
}

Machine DgxA100() {
  Machine m;
  const unsigned int buses[8] = {0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd};
  const int numa[8] = {3, 3, 1, 1, 7, 7, 5, 5};
  for (int i = 0; i < 8; ++i) {
    FakeGpu g{.name = "NVIDIA A100-SXM4-80GB", .memory_bytes = 81920 * kMiB, .bus = buses[i], .numa = numa[i],
              .mig_capable = true, .row_remapping = true};
    for (int l = 0; l < 12; ++l) g.links.push_back({Peer::kSwitch, l / 2});
    m.gpus.push_back(g);
  }
  m.pcie = Pcie(8, [](int i, int j) { return i / 2 == j / 2 ? NVML_TOPOLOGY_MULTIPLE : NVML_TOPOLOGY_SYSTEM; });
  return m;
}

Machine Pcie8() {
  Machine m;
  for (int i = 0; i < 8; ++i) {
    m.gpus.push_back(FakeGpu{.name = "NVIDIA L40S", .memory_bytes = 46068 * kMiB,
                             .bus = static_cast<unsigned int>(0x17 + 0x10 * i), .numa = i < 4 ? 0 : 1,
                             .row_remapping = true});
  }
  m.pcie = Pcie(8, [](int i, int j) {
    if (i / 4 != j / 4) return NVML_TOPOLOGY_SYSTEM;
    return i / 2 == j / 2 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_NODE;
  });
  return m;
}

// The state of the fake, set up by nvmlInit_v2.
struct State {
  std::mutex mu;
  bool initialised = false;
  Machine machine;
  std::vector<nvmlDevice_st> handles;
  std::set<int> unhealthy;
  std::set<int> mig;
  std::set<int> lost;
  std::string control_file;
  size_t control_lines_seen = 0;  // lines of the control file already acted on
  std::vector<std::pair<int, unsigned long long>> pending_xids;
};

State& S() {
  static State state;  // destroyed when the library is unloaded (dlclose), after nvmlShutdown
  return state;
}

std::set<int> IndexList(const char* env) {
  std::set<int> out;
  const char* v = std::getenv(env);
  if (v == nullptr) return out;
  std::stringstream in(v);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.insert(std::atoi(item.c_str()));
  }
  return out;
}

// Acts on the control file's new lines (caller holds the lock).
void ReadControlLocked(State& s) {
  if (s.control_file.empty()) return;
  std::ifstream in(s.control_file);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    if (n++ < s.control_lines_seen) continue;
    std::istringstream words(line);
    std::string verb;
    int gpu = -1;
    words >> verb >> gpu;
    if (verb == "xid") {
      unsigned long long code = 0;
      words >> code;
      s.pending_xids.emplace_back(gpu, code);
    } else if (verb == "lost") {
      s.lost.insert(gpu);
    }
  }
  s.control_lines_seen = std::max(s.control_lines_seen, n);
}

nvmlReturn_t CheckDevice(State& s, nvmlDevice_t device) {
  if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || device->index < 0 || device->index >= static_cast<int>(s.machine.gpus.size())) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return s.lost.count(device->index) ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

const FakeGpu& Gpu(State& s, nvmlDevice_t device) { return s.machine.gpus[static_cast<size_t>(device->index)]; }

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

nvmlPciInfo_t PciOf(unsigned int bus, unsigned int device_id) {
  nvmlPciInfo_t pci{};
  pci.bus = bus;
  pci.pciDeviceId = device_id << 16 | 0x10de;
  std::snprintf(pci.busIdLegacy, sizeof pci.busIdLegacy, "0000:%02X:00.0", bus);
  std::snprintf(pci.busId, sizeof pci.busId, "00000000:%02X:00.0", bus);
  return pci;
}

// NVSwitches sit on their own buses.
constexpr unsigned int kSwitchBus = 0xc4;

#define FAKE_LOCK       \
  State& s = S();       \
  std::lock_guard lock(s.mu)

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() {
  FAKE_LOCK;
  if (const char* err = std::getenv("FAKE_NVML_INIT_ERROR"); err != nullptr && *err != '\0') return std::atoi(err);
  const char* name = std::getenv("FAKE_NVML_MACHINE");
  const std::string machine = name != nullptr ? name : "";
  if (machine == "dgx1-v100") {
    s.machine = Dgx1V100();
  } else if (machine == "dgx-a100") {
    s.machine = DgxA100();
  } else if (machine == "pcie-8") {
    s.machine = Pcie8();
  } else if (machine == "none") {
    s.machine = Machine{};
  } else {
    std::fprintf(stderr, "fake NVML: FAKE_NVML_MACHINE=\"%s\" is not dgx1-v100, dgx-a100, pcie-8 or none\n",
                 machine.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  s.handles.assign(s.machine.gpus.size(), {});
  for (size_t i = 0; i < s.handles.size(); ++i) s.handles[i].index = static_cast<int>(i);
  s.unhealthy = IndexList("FAKE_NVML_UNHEALTHY");
  s.mig = IndexList("FAKE_NVML_MIG");
  const char* control = std::getenv("FAKE_NVML_CONTROL");
  s.control_file = control != nullptr ? control : "";
  s.control_lines_seen = 0;
  s.lost.clear();
  s.pending_xids.clear();
  s.initialised = true;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() {
  FAKE_LOCK;
  if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
  s.initialised = false;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return CopyString("535.183.01-fake", version, length);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  FAKE_LOCK;
  if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
  *count = static_cast<unsigned int>(s.machine.gpus.size());
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                                                  nvmlDevice_t* device) {
  FAKE_LOCK;
  if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
  if (index >= s.handles.size() || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  ReadControlLocked(s);
  if (s.lost.count(static_cast<int>(index))) return NVML_ERROR_GPU_IS_LOST;
  *device = &s.handles[index];
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                                      unsigned int length) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%08x-fake-4e11-a000-%012x", Gpu(s, device).bus, device->index);
  return CopyString(text, uuid, length);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                                      unsigned int length) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  return CopyString(Gpu(s, device).name, name, length);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                                            nvmlMemory_t* memory) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  memory->total = Gpu(s, device).memory_bytes;
  memory->used = 0;
  memory->free = memory->total;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
                                                                            nvmlPciInfo_t* pci) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  *pci = PciOf(Gpu(s, device).bus, 0x20b5);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device,
                                                                                unsigned int node_set_size,
                                                                                unsigned long* node_set,
                                                                                nvmlAffinityScope_t scope) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  if (scope != NVML_AFFINITY_SCOPE_NODE || node_set_size == 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::fill(node_set, node_set + node_set_size, 0UL);
  const int numa = Gpu(s, device).numa;
  if (static_cast<unsigned int>(numa / 64) >= node_set_size) return NVML_ERROR_INSUFFICIENT_SIZE;
  node_set[numa / 64] = 1UL << (numa % 64);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                                         unsigned int* pending) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  if (!Gpu(s, device).mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = s.mig.count(device->index) ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                                             nvmlEnableState_t* active) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  const FakeGpu& g = Gpu(s, device);
  if (g.links.empty()) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= g.links.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *active = NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                                        unsigned int link,
                                                                                        nvmlPciInfo_t* pci) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  const FakeGpu& g = Gpu(s, device);
  if (link >= g.links.size()) return g.links.empty() ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  const Link& l = g.links[link];
  *pci = l.peer == Peer::kGpu ? PciOf(s.machine.gpus[static_cast<size_t>(l.remote)].bus, 0x20b5)
                              : PciOf(kSwitchBus + static_cast<unsigned int>(l.remote), 0x1af1);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* type) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  const FakeGpu& g = Gpu(s, device);
  if (link >= g.links.size()) return g.links.empty() ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  *type = g.links[link].peer == Peer::kGpu ? NVML_NVLINK_DEVICE_TYPE_GPU : NVML_NVLINK_DEVICE_TYPE_SWITCH;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(
    nvmlDevice_t a, nvmlDevice_t b, nvmlGpuTopologyLevel_t* level) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, a); r != NVML_SUCCESS) return r;
  if (nvmlReturn_t r = CheckDevice(s, b); r != NVML_SUCCESS) return r;
  *level = s.machine.pcie[static_cast<size_t>(a->index)][static_cast<size_t>(b->index)];
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(
    nvmlDevice_t device, nvmlEnableState_t* pending) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  if (Gpu(s, device).row_remapping) return NVML_ERROR_NOT_SUPPORTED;
  *pending = s.unhealthy.count(device->index) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device,
                                                                              unsigned int* correctable,
                                                                              unsigned int* uncorrectable,
                                                                              unsigned int* pending,
                                                                              unsigned int* failure) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  if (!Gpu(s, device).row_remapping) return NVML_ERROR_NOT_SUPPORTED;
  const bool broken = s.unhealthy.count(device->index) > 0;
  *correctable = 0;
  *uncorrectable = broken ? 512 : 0;
  *pending = 0;
  *failure = broken ? 1 : 0;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  FAKE_LOCK;
  if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
  *set = new nvmlEventSet_st;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                                             unsigned long long types,
                                                                             nvmlEventSet_t set) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  if (set == nullptr || (types & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
  set->devices.insert(device->index);
  return NVML_SUCCESS;
}

// Waits as the real call does: returns an event at once when one is queued,
// else polls the control file until `timeout_ms` has passed.
__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                                        unsigned int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      FAKE_LOCK;
      if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
      ReadControlLocked(s);
      while (!s.pending_xids.empty()) {
        const auto [gpu, code] = s.pending_xids.front();
        s.pending_xids.erase(s.pending_xids.begin());
        if (set->devices.count(gpu) == 0) continue;
        *data = nvmlEventData_t{.device = &s.handles[static_cast<size_t>(gpu)],
                                .eventType = nvmlEventTypeXidCriticalError, .eventData = code,
                                .gpuInstanceId = 0xFFFFFFFF, .computeInstanceId = 0xFFFFFFFF};
        return NVML_SUCCESS;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  delete set;
  return NVML_SUCCESS;
}

}  // extern "C"
