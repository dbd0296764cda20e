// The GPU map (`GET /ui`): every node's GPUs as a picture, for people.
//
// One HTML page, rendered on the server from one ClusterSnapshot: per node,
// a row per GPU with the share each pod holds (coloured by tenant, the pod,
// tenant, share, burst limit and memory in its tooltip), the burst its pods
// may take beyond what they hold, unhealthy GPUs struck through, and the
// node's NVLink groups; then the pods filter refused on every node and why
// (RecentRefusals). Inline SVG and CSS, a few lines of inline script: no
// external asset, so it works where the cluster has no way out.
//
// Sized for 5000 nodes × 8 GPUs: a query (`q`) keeps the nodes whose name,
// GPU model, pods or tenants contain every word of it, and a page shows
// `per_page` of them (at most kMaxNodesPerPage); every text and every list
// drawn is capped, so the page is bounded whatever the cluster holds.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/cache/cluster_snapshot.h"
#include "scheduler/tenancy/tenant_set.h"
#include "extender/service/recent_refusals.h"

namespace tessera {

/// What a GET of /ui asks: `?q=<words>&page=<n>&per_page=<n>`.
///
/// Words of `q` are matched case-insensitively as substrings; all must
/// match. A word may name the field it is looked for in: `node:`, `model:`,
/// `pod:`, `tenant:` (tenant, tenant label or namespace of a pod holding
/// GPUs there), or `is:unhealthy`, `is:problem`, `is:free` (a GPU nobody
/// holds); a bare word is looked for in all the fields.
struct GpuMapQuery {
  std::string q;
  size_t page = 1;       ///< 1-based; past the last page shows the last.
  size_t per_page = 100; ///< Nodes per page, 1..kMaxNodesPerPage.
};

inline constexpr size_t kMaxNodesPerPage = 200;
inline constexpr size_t kMaxQueryBytes = 200;
/// Pods drawn on one GPU; the rest are summed into one "+N more" segment.
inline constexpr size_t kMaxPodsDrawnPerGpu = 16;
/// Pending pods listed; the count says how many matched.
inline constexpr size_t kMaxPendingListed = 200;
/// Bytes of any one name or message shown.
inline constexpr size_t kMaxTextBytes = 160;

/// The query of a request target ("/ui?q=a100&page=2"); bad numbers read as
/// their defaults, out-of-range ones are clamped.
GpuMapQuery ParseGpuMapQuery(std::string_view target);

struct GpuMapInputs {
  const ClusterSnapshot* snapshot = nullptr;
  /// The tenants in force, to name each pod's tenant; may be null.
  const TenantSet* tenants = nullptr;
  /// Pods filter refused everywhere (RecentRefusals::List), newest first.
  /// Those the snapshot shows holding GPUs are left out (bound since).
  std::vector<FilterRefusal> refusals = {};
  absl::Time now = absl::Now();
  /// Where the model comes from ("cluster file ...", "kubeconfig ...").
  std::string source = {};
};

/// The whole page, `<!DOCTYPE html>` to `</html>`.
std::string RenderGpuMapPage(const GpuMapInputs& in, const GpuMapQuery& query);

}  // namespace tessera
