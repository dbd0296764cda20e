// What the tenant replay reports (sim/tenant_replay.h): per trace and
// policy, one row per tenant, as Markdown and as CSV.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/experiment.h"

namespace tessera::sim {

/// Time to place over a set of placements: mean and 95th percentile
/// (nearest rank: the smallest wait at least 95% of the waits are at most).
struct WaitStats {
  double mean = 0;
  int64_t p95 = 0;
  size_t n = 0;
};
WaitStats WaitStatsOf(std::vector<int64_t> waits);

/// ∫ min(held, guaranteed) / ∫ min(wanted, guaranteed), in %; nullopt for a
/// tenant without a milli-GPU guarantee, 100 for one that never asked for it.
std::optional<double> GuaranteeMetPercent(int64_t held, int64_t wanted, bool has_guarantee);

/// Per trace and policy (runs of the tenant replay only), one table: a row
/// per tenant and one for pods of no tenant when there are any; counts are
/// means over seeds, waits and the guarantee pooled over them.
std::string TenantMarkdown(const std::vector<RunSummary>& runs);

/// One row per run and tenant: trace,policy,seed,tenant,guaranteed_milli,max_milli,submitted,placed,
/// refused_over_max,never_placed,evicted,preemptions,victims,wait_mean_s,wait_p95_s,guarantee_met_percent.
void WriteTenantsCsv(const std::vector<RunSummary>& runs, std::ostream& out);

}  // namespace tessera::sim
