#include "policies/baselines/host_resources_fit.h"

#include "absl/strings/str_cat.h"
#include "scheduler/framework/plugin_args.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<Plugin>> HostResourcesFitPlugin::New(PluginArgs& args) {
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<HostResourcesFitPlugin>();
}

FilterVerdict HostResourcesFitPlugin::FilterNode(const CycleState& cycle, const NodeView& node) const {
  const PodGpuRequest& r = cycle.request();
  const HostResources* host = node.host;
  if (host == nullptr) return FilterVerdict::Success();
  const MilliCpu cpu = r.host.cpu;
  const MemoryMiB memory = r.host.memory;
  if (cpu > host->cpu_free() || memory > host->memory_free()) {
    if (cpu > host->cpu_capacity) {
      return FilterVerdict::Never("cpu_too_small", absl::StrCat("node has ", host->cpu_capacity.value(),
                                                                " milli-CPU in all, pod needs ", cpu.value()));
    }
    if (memory > host->memory_capacity) {
      return FilterVerdict::Never("memory_too_small", absl::StrCat("node has ", host->memory_capacity.value(),
                                                                   " MiB of memory in all, pod needs ", memory.value()));
    }
    if (cpu > host->cpu_free()) {
      return FilterVerdict::NotNow("insufficient_cpu", absl::StrCat("node has ", host->cpu_free().value(),
                                                                    " milli-CPU free, pod needs ", cpu.value()));
    }
    return FilterVerdict::NotNow("insufficient_memory", absl::StrCat("node has ", host->memory_free().value(),
                                                                     " MiB of memory free, pod needs ", memory.value()));
  }
  return FilterVerdict::Success();
}

}  // namespace tessera
