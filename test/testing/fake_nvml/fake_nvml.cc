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
//   FAKE_NVML_MIG_INSTANCES  "6:3g.40gb@0,2g.20gb@4,1g.10gb@6;7:7g.80gb@0": the GPU instances of GPUs
//                        in MIG mode, <profile>@<start slice>, each with one compute instance (one MIG
//                        device) or N of them with "*N" ("3g.40gb@0*2"). The A100-80GB's profiles, with
//                        the ids and sizes its driver reports: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb,
//                        3g.40gb, 4g.40gb, 7g.80gb. Not checked for overlap (the agent's job). MIG
//                        devices fill the last of the 7 slots, so the first ones answer NOT_FOUND.
//   FAKE_NVML_FAIL       "nvmlGpuInstanceGetInfo=999": these MIG calls answer that nvmlReturn_t (13,
//                        NVML_ERROR_FUNCTION_NOT_FOUND, is what a driver without the call answers)
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
#include <map>
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
  int gpu_instance = -1;     // a MIG device: its GPU instance (position in the GPU's list); -1: a GPU
  int compute_instance = 0;  // a MIG device: which of the GPU instance's compute instances
};
struct nvmlGpuInstance_st {
  int gpu = 0;
  int position = 0;  // in the GPU's list of GPU instances
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

// A GPU instance profile as an A100-80GB's driver reports it (nvidia-smi mig -lgip):
// the size nvmlDeviceGetGpuInstanceProfileInfo is asked for, the id instances
// report, compute slices, MiB, memory slices spanned, instances that fit.
struct FakeProfile {
  unsigned int size = 0;
  unsigned int id = 0;
  unsigned int slices = 0;
  unsigned long long memory_mib = 0;
  unsigned int memory_slices = 0;
  unsigned int instances = 0;
  const char* name = "";
};

constexpr FakeProfile kA100_80Profiles[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 9728, 1, 7, "1g.10gb"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 9728, 1, 1, "1g.10gb+me"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 19968, 2, 4, "1g.20gb"},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 19968, 2, 3, "2g.20gb"},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 40192, 4, 2, "3g.40gb"},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 40192, 4, 1, "4g.40gb"},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 80640, 8, 1, "7g.80gb"},
};

// An A100's MIG device slots (nvmlDeviceGetMaxMigDeviceCount).
constexpr unsigned int kMigDeviceSlots = 7;

struct FakeGpuInstance {
  const FakeProfile* profile = nullptr;
  unsigned int start = 0;
  unsigned int id = 0;  // odd numbers 1, 3, 5…: never its position, so a mix-up shows
  int compute_instances = 1;
};

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
  // MIG, by GPU index: its GPU instances, their handles, and its MIG device slots (index -1: empty).
  std::map<int, std::vector<FakeGpuInstance>> gpu_instances;
  std::map<int, std::vector<nvmlGpuInstance_st>> gpu_instance_handles;
  std::map<int, std::vector<nvmlDevice_st>> mig_devices;
  std::map<std::string, nvmlReturn_t> fail;  // FAKE_NVML_FAIL
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

std::vector<std::string> Split(const std::string& text, char by) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, by)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// FAKE_NVML_MIG_INSTANCES into s.gpu_instances; false (and why on stderr) when it is malformed.
bool ReadMigInstances(State& s) {
  s.gpu_instances.clear();
  const char* v = std::getenv("FAKE_NVML_MIG_INSTANCES");
  if (v == nullptr) return true;
  for (const std::string& gpu_part : Split(v, ';')) {
    const size_t colon = gpu_part.find(':');
    const int gpu = colon == std::string::npos ? -1 : std::atoi(gpu_part.substr(0, colon).c_str());
    if (gpu < 0 || gpu >= static_cast<int>(s.machine.gpus.size()) || !s.machine.gpus[gpu].mig_capable ||
        s.mig.count(gpu) == 0) {
      std::fprintf(stderr, "fake NVML: \"%s\": not a MIG-capable GPU in FAKE_NVML_MIG\n", gpu_part.c_str());
      return false;
    }
    std::vector<FakeGpuInstance>& list = s.gpu_instances[gpu];
    int devices = 0;
    for (const std::string& item : Split(gpu_part.substr(colon + 1), ',')) {
      const size_t at = item.find('@'), star = item.find('*');
      const std::string name = item.substr(0, at);
      FakeGpuInstance gi{.id = static_cast<unsigned int>(2 * list.size() + 1)};
      for (const FakeProfile& p : kA100_80Profiles) {
        if (name == p.name) gi.profile = &p;
      }
      if (at == std::string::npos || gi.profile == nullptr) {
        std::fprintf(stderr, "fake NVML: \"%s\" is not <A100-80GB profile>@<start>\n", item.c_str());
        return false;
      }
      gi.start = static_cast<unsigned int>(std::atoi(item.c_str() + at + 1));
      if (star != std::string::npos) gi.compute_instances = std::atoi(item.c_str() + star + 1);
      devices += gi.compute_instances;
      list.push_back(gi);
    }
    if (devices > static_cast<int>(kMigDeviceSlots)) {
      std::fprintf(stderr, "fake NVML: GPU %d: more MIG devices than its %u slots\n", gpu, kMigDeviceSlots);
      return false;
    }
  }
  return true;
}

// The handles of s.gpu_instances: GPU instances, and MIG devices in the last slots.
void MakeMigHandles(State& s) {
  s.gpu_instance_handles.clear();
  s.mig_devices.clear();
  for (const auto& [gpu, list] : s.gpu_instances) {
    std::vector<nvmlDevice_st> devices;
    for (size_t k = 0; k < list.size(); ++k) {
      s.gpu_instance_handles[gpu].push_back({gpu, static_cast<int>(k)});
      for (int c = 0; c < list[k].compute_instances; ++c) devices.push_back({gpu, static_cast<int>(k), c});
    }
    std::vector<nvmlDevice_st>& slots = s.mig_devices[gpu];
    slots.assign(kMigDeviceSlots - devices.size(), nvmlDevice_st{.index = -1});
    slots.insert(slots.end(), devices.begin(), devices.end());
  }
}

std::map<std::string, nvmlReturn_t> ReadFailures() {
  std::map<std::string, nvmlReturn_t> out;
  const char* v = std::getenv("FAKE_NVML_FAIL");
  if (v == nullptr) return out;
  for (const std::string& item : Split(v, ',')) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos) out[item.substr(0, eq)] = std::atoi(item.c_str() + eq + 1);
  }
  return out;
}

// What FAKE_NVML_FAIL makes `call` answer; NVML_SUCCESS: carry on.
nvmlReturn_t Injected(const State& s, const char* call) {
  const auto it = s.fail.find(call);
  return it == s.fail.end() ? NVML_SUCCESS : it->second;
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
  if (!ReadMigInstances(s)) return NVML_ERROR_UNKNOWN;
  MakeMigHandles(s);
  s.fail = ReadFailures();
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
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
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
  if (device->gpu_instance >= 0) {
    const FakeGpuInstance& gi = s.gpu_instances[device->index][static_cast<size_t>(device->gpu_instance)];
    std::snprintf(text, sizeof text, "MIG-%08x-fake-4e11-%04x-%012x", Gpu(s, device).bus, gi.id,
                  device->compute_instance);
    return CopyString(text, uuid, length);
  }
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

namespace {

// MIG. A parent's calls refuse a MIG device (and the reverse) with INVALID_ARGUMENT.
nvmlReturn_t CheckParent(State& s, nvmlDevice_t device, const char* call) {
  if (nvmlReturn_t r = Injected(s, call); r != NVML_SUCCESS) return r;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  if (device->gpu_instance >= 0) return NVML_ERROR_INVALID_ARGUMENT;
  return Gpu(s, device).mig_capable ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

const FakeProfile* ProfileOfSize(unsigned int size) {
  for (const FakeProfile& p : kA100_80Profiles) {
    if (p.size == size) return &p;
  }
  return nullptr;
}

template <typename Info>
void FillProfile(const FakeProfile& p, Info* info) {
  info->id = p.id;
  info->isP2pSupported = 0;
  info->sliceCount = p.slices;
  info->instanceCount = p.instances;
  info->multiprocessorCount = 14 * p.slices;
  info->copyEngineCount = p.slices;
  info->decoderCount = p.slices / 2;
  info->encoderCount = 0;
  info->jpegCount = p.size == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 || p.slices == 7 ? 1 : 0;
  info->ofaCount = info->jpegCount;
  info->memorySizeMB = p.memory_mib;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                                                   unsigned int* count) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckParent(s, device, "nvmlDeviceGetMaxMigDeviceCount"); r != NVML_SUCCESS) return r;
  *count = s.mig.count(device->index) ? kMigDeviceSlots : 0;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                                        unsigned int index,
                                                                                        nvmlDevice_t* mig_device) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckParent(s, device, "nvmlDeviceGetMigDeviceHandleByIndex"); r != NVML_SUCCESS) return r;
  if (s.mig.count(device->index) == 0 || index >= kMigDeviceSlots || mig_device == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const auto it = s.mig_devices.find(device->index);
  if (it == s.mig_devices.end() || it->second[index].index < 0) return NVML_ERROR_NOT_FOUND;
  *mig_device = &it->second[index];
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device,
                                                                               unsigned int* id) {
  FAKE_LOCK;
  if (nvmlReturn_t r = Injected(s, "nvmlDeviceGetGpuInstanceId"); r != NVML_SUCCESS) return r;
  if (nvmlReturn_t r = CheckDevice(s, device); r != NVML_SUCCESS) return r;
  if (device->gpu_instance < 0 || id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *id = s.gpu_instances[device->index][static_cast<size_t>(device->gpu_instance)].id;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device,
                                                                                 unsigned int id,
                                                                                 nvmlGpuInstance_t* instance) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckParent(s, device, "nvmlDeviceGetGpuInstanceById"); r != NVML_SUCCESS) return r;
  if (instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const std::vector<FakeGpuInstance>& list = s.gpu_instances[device->index];
  for (size_t k = 0; k < list.size(); ++k) {
    if (list[k].id != id) continue;
    *instance = &s.gpu_instance_handles[device->index][k];
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t instance,
                                                                           nvmlGpuInstanceInfo_t* info) {
  FAKE_LOCK;
  if (nvmlReturn_t r = Injected(s, "nvmlGpuInstanceGetInfo"); r != NVML_SUCCESS) return r;
  if (!s.initialised) return NVML_ERROR_UNINITIALIZED;
  if (instance == nullptr || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const FakeGpuInstance& gi = s.gpu_instances[instance->gpu][static_cast<size_t>(instance->position)];
  *info = nvmlGpuInstanceInfo_t{.device = &s.handles[static_cast<size_t>(instance->gpu)], .id = gi.id,
                                .profileId = gi.profile->id,
                                .placement = {.start = gi.start, .size = gi.profile->memory_slices}};
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckParent(s, device, "nvmlDeviceGetGpuInstanceProfileInfo"); r != NVML_SUCCESS) return r;
  if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const FakeProfile* p = ProfileOfSize(profile);
  if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  FillProfile(*p, info);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t* info) {
  FAKE_LOCK;
  if (nvmlReturn_t r = CheckParent(s, device, "nvmlDeviceGetGpuInstanceProfileInfoV"); r != NVML_SUCCESS) return r;
  if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const FakeProfile* p = ProfileOfSize(profile);
  if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  FillProfile(*p, info);
  std::snprintf(info->name, sizeof info->name, "MIG %s", p->name);
  return NVML_SUCCESS;
}

}  // extern "C"
