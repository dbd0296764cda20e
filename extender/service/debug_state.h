// The `GET /debug` document: what an operator needs when allocations look
// wrong — is the watch in sync, which binds are in flight, which pods and
// nodes are inconsistent.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "k8s/client/reflector.h"
#include "k8s/sync/pod_sink.h"
#include "scheduler/cache/cluster_snapshot.h"

namespace tessera {

struct DebugInputs {
  const ClusterSnapshot* snapshot = nullptr;
  std::vector<std::pair<std::string, k8s::ReflectorStatus>> watches;  ///< By resource; empty without an API server.
  std::vector<k8s::PodProblem> pod_problems;
  std::string source;  ///< "kubeconfig ...", "cluster file ..."
};

/// Pretty-printed JSON: {"source", "generation", "nodes", "gpus", "watches": {..},
/// "inFlight": [{pod, uid, node, gpus}], "nodeProblems": [{node, problem}],
/// "podProblems": [{pod, uid, kind, message}]}.
std::string RenderDebugState(const DebugInputs& in);

}  // namespace tessera
