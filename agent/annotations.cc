#include "agent/annotations.h"

#include "absl/strings/str_cat.h"
#include "scheduler/common/json_text.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera::agent {
namespace {

// `,"mig":[{"profile":"3g.40gb","start":4,"uuid":"MIG-…"},…]`; no uuid key when it is unknown.
void AppendMigInstances(std::string& out, const std::vector<MigInstance>& instances) {
  out += ",\"mig\":[";
  for (size_t k = 0; k < instances.size(); ++k) {
    const MigInstance& m = instances[k];
    out += k > 0 ? ",{\"profile\":" : "{\"profile\":";
    AppendJsonString(out, m.profile);
    absl::StrAppend(&out, ",\"start\":", m.start);
    if (!m.uuid.empty()) {
      out += ",\"uuid\":";
      AppendJsonString(out, m.uuid);
    }
    out += '}';
  }
  out += ']';
}

}  // namespace

std::string InventoryAnnotation(const NodeGpus& node) {
  std::string out = "[";
  for (const ProbedGpu& g : node.gpus) {
    const GpuDevice& d = g.device;
    if (out.size() > 1) out += ',';
    absl::StrAppend(&out, "{\"index\":", d.index, ",\"uuid\":");
    AppendJsonString(out, d.uuid);
    out += ",\"model\":";
    AppendJsonString(out, d.model);
    absl::StrAppend(&out, ",\"memoryMiB\":", d.memory.value());
    if (d.numa >= 0) absl::StrAppend(&out, ",\"numa\":", d.numa);
    if (!g.pci_bus_id.empty()) {
      out += ",\"pciBusId\":";
      AppendJsonString(out, g.pci_bus_id);
    }
    if (g.mig_enabled) out += ",\"migEnabled\":true";
    if (g.mig_enabled && g.mig_listed) AppendMigInstances(out, d.mig);
    if (!d.healthy) {
      out += ",\"healthy\":false,\"unhealthyReason\":";
      AppendJsonString(out, g.unhealthy_reason);
    }
    out += '}';
  }
  out += ']';
  return out;
}

std::optional<std::string> TopologyAnnotation(const NodeGpus& node) {
  const size_t n = node.gpus.size();
  if (n == 0 || n > static_cast<size_t>(GpuTopology::kMaxGpus)) return std::nullopt;
  std::string out = "{\"links\":[";
  for (size_t i = 0; i < n; ++i) {
    out += i > 0 ? ",[" : "[";
    for (size_t j = 0; j < n; ++j) {
      if (j > 0) out += ',';
      const GpuLink& link = node.Link(i, j);
      if (i == j) {
        out += "\"X\"";
      } else if (link.is_nvlink()) {
        absl::StrAppend(&out, link.nvlinks);
      } else {
        absl::StrAppend(&out, "\"", Absl(GpuLinkKindName(link.kind)), "\"");
      }
    }
    out += ']';
  }
  out += "]}";
  return out;
}

}  // namespace tessera::agent
