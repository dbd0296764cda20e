// A cluster described in a file, for running Tessera without Kubernetes (the
// demo) and for tests: nodes as Kubernetes would describe their GPUs, and pods
// with the assignment annotation Tessera's bind writes.
//
//   nodes:
//     - name: gpu-node-1
//       annotations: {tessera.io/gpu-inventory: '[{"index":0,"model":"NVIDIA-A100-SXM4-80GB","memoryMiB":81920}]'}
//       labels: {nvidia.com/gpu.count: "8", nvidia.com/gpu.product: NVIDIA-T4, nvidia.com/gpu.memory: "15360"}
//       allocatable: {nvidia.com/gpu: "8"}
//   pods:
//     - namespace: ml
//       name: bert-0
//       uid: 5a6c...            # optional; defaults to namespace/name
//       annotations: {tessera.io/gpu-assignment: '{"node":"gpu-node-1","gpus":[{"index":0,"milli":250}]}'}
//       labels: {tessera.io/tenant: research}   # optional: the tenant the pod belongs to
//
// The same parsers as for API objects read these fields, so a node or pod
// that works here works in a cluster.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "scheduler/cache/cluster_model.h"

namespace tessera {

/// Loads `path` into `model` (without publishing). Every problem is reported,
/// as `file:line:col: field.path: message`, in one InvalidArgument. A node whose
/// GPU inventory is unparsable is not an error here: it is loaded with its
/// inventory error, as the API would deliver it.
absl::Status LoadClusterFile(const std::string& path, ClusterModel& model);

/// The same for text already read (tests).
absl::Status LoadClusterText(std::string_view yaml, std::string_view file_name, ClusterModel& model);

}  // namespace tessera
