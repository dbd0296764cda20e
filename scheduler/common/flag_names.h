// Command lines as Kubernetes tools spell them: abseil names flags with
// underscores (--cluster_file), operators type dashes (--cluster-file).
// Shared by tessera-extender and tessera-node-agent.
#pragma once

namespace tessera {

/// Rewrites `--cluster-file=x` to `--cluster_file=x` in place (the name only,
/// never the value). Stops at `--`.
void AcceptDashedFlagNames(int argc, char** argv);

}  // namespace tessera
