#include "k8s/node_allocatable.h"

#include "absl/strings/str_cat.h"
#include "scheduler/model/quantity_parse.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {

absl::StatusOr<std::optional<HostResources>> ParseNodeAllocatable(std::optional<std::string_view> cpu,
                                                                  std::optional<std::string_view> memory) {
  if (!cpu.has_value() || !memory.has_value()) return std::optional<HostResources>();
  absl::StatusOr<MilliCpu> cpu_milli = ParseCpuQuantity(*cpu);
  if (!cpu_milli.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("status.allocatable.cpu=\"", Absl(*cpu), "\": ", cpu_milli.status().message()));
  }
  absl::StatusOr<MemoryMiB> memory_mib = ParseMemoryQuantity(*memory);
  if (!memory_mib.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("status.allocatable.memory=\"", Absl(*memory), "\": ", memory_mib.status().message()));
  }
  return std::optional<HostResources>(HostResources{.cpu_capacity = *cpu_milli, .memory_capacity = *memory_mib});
}

}  // namespace tessera::k8s
