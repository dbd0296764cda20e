#include "test/testing/assignment_audit.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/gpu_assignment.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/gpu.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

std::string PodName(const json& pod) {
  return absl::StrCat(pod["metadata"].value("namespace", ""), "/", pod["metadata"].value("name", ""));
}

const json* AnnotationOf(const json& pod, std::string_view key) {
  const json& meta = pod["metadata"];
  if (!meta.contains("annotations")) return nullptr;
  auto it = meta["annotations"].find(std::string(key));
  return it == meta["annotations"].end() || !it->is_string() ? nullptr : &*it;
}

bool AsksForGpus(const json& pod) {
  return AnnotationOf(pod, k8s::kGpuFraction) != nullptr || AnnotationOf(pod, k8s::kGpuCount) != nullptr;
}

}  // namespace

AssignmentAudit AuditAssignments(const std::vector<json>& pods, const std::map<std::string, AuditedNode>& nodes) {
  AssignmentAudit audit;
  std::map<std::pair<std::string, int>, GpuUsage> usage;
  for (const json& pod : pods) {
    const std::string node = pod["spec"].value("nodeName", "");
    if (node.empty()) continue;
    ++audit.bound_pods;
    const json* annotation = AnnotationOf(pod, k8s::kGpuAssignment);
    if (annotation == nullptr) {
      if (AsksForGpus(pod)) audit.problems.push_back(PodName(pod) + " asks for GPUs but is bound with no assignment");
      continue;
    }
    absl::StatusOr<GpuAssignment> assignment = k8s::ParseGpuAssignment(annotation->get<std::string>());
    if (!assignment.ok()) {
      audit.problems.push_back(absl::StrCat(PodName(pod), ": unparsable assignment: ", assignment.status().message()));
      continue;
    }
    ++audit.assigned_pods;
    auto offered = nodes.find(node);
    if (assignment->node != node || offered == nodes.end()) {
      audit.problems.push_back(absl::StrCat(PodName(pod), " is bound to ", node, " but its assignment names ",
                                            assignment->node, offered == nodes.end() ? " (an unknown node)" : ""));
      continue;
    }
    for (const GpuShare& share : assignment->gpus) {
      if (share.index < 0 || share.index >= offered->second.gpus) {
        audit.problems.push_back(absl::StrCat(PodName(pod), " holds GPU ", share.index, " of ", node, ", which has ",
                                              offered->second.gpus));
        continue;
      }
      usage[{node, share.index}].Add(share);
    }
  }
  audit.gpus_in_use = static_cast<int>(usage.size());
  for (const auto& [gpu, used] : usage) {
    const AuditedNode& offered = nodes.at(gpu.first);
    if (used.guaranteed > kOneGpu || used.memory > offered.memory) {
      audit.problems.push_back(absl::StrCat("GPU ", gpu.second, " of ", gpu.first, " is over-committed: ",
                                            used.guaranteed.value(), " milli-GPU and ", used.memory.value(),
                                            " MiB guaranteed to ", used.pods, " pods"));
    }
  }
  return audit;
}

}  // namespace tessera::testing
