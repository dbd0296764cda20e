#include "sim/tenant_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/report.h"

namespace tessera::sim {
namespace {

constexpr const char* kNoTenant = "(no tenant)";

std::string TenantName(const RunSummary& r, size_t t) {
  return t < r.tenants->size() ? r.tenants->tenant(static_cast<TenantIndex>(t)).name : kNoTenant;
}

bool HasGuarantee(const RunSummary& r, size_t t) {
  if (t >= r.tenants->size()) return false;
  const int64_t g = r.tenants->tenant(static_cast<TenantIndex>(t)).guaranteed.milli.value();
  return g != GpuQuota::kUnlimited && g > 0;
}

std::string Gpus(int64_t milli) {
  if (milli == GpuQuota::kUnlimited) return "–";
  return milli % 1000 == 0 ? absl::StrCat(milli / 1000) : absl::StrFormat("%.1f", static_cast<double>(milli) / 1000);
}

std::string Count(double total, size_t runs) {
  const double mean = total / static_cast<double>(std::max<size_t>(runs, 1));
  return mean == static_cast<double>(static_cast<int64_t>(mean)) ? absl::StrFormat("%.0f", mean)
                                                                 : absl::StrFormat("%.1f", mean);
}

std::string Percent(std::optional<double> p) { return p.has_value() ? absl::StrFormat("%.1f%%", *p) : "–"; }

// One tenant's row of one (trace, policy): counts summed over its runs.
std::string Row(const std::vector<const RunSummary*>& runs, size_t t) {
  const RunSummary& first = *runs.front();
  TenantStats sum;
  for (const RunSummary* r : runs) {
    const TenantStats& s = r->tenancy->tenants[t];
    sum.submitted += s.submitted;
    sum.placed += s.placed;
    sum.refused_over_max += s.refused_over_max;
    sum.never_placed += s.never_placed;
    sum.evicted += s.evicted;
    sum.preemptions += s.preemptions;
    sum.victims += s.victims;
    sum.waits.insert(sum.waits.end(), s.waits.begin(), s.waits.end());
    sum.guarantee_held += s.guarantee_held;
    sum.guarantee_wanted += s.guarantee_wanted;
  }
  const bool tenant = t < first.tenants->size();
  const TenantSpec* spec = tenant ? &first.tenants->tenant(static_cast<TenantIndex>(t)) : nullptr;
  const WaitStats w = WaitStatsOf(std::move(sum.waits));
  const size_t n = runs.size();
  auto c = [&](int64_t v) { return Count(static_cast<double>(v), n); };
  return absl::StrCat("| ", TenantName(first, t), " | ", spec ? Gpus(spec->guaranteed.milli.value()) : "–", " | ",
                      spec ? Gpus(spec->max.milli.value()) : "–", " | ", c(sum.submitted), " | ", c(sum.placed), " | ",
                      c(sum.refused_over_max), " | ", c(sum.never_placed), " | ", c(sum.evicted), " | ",
                      c(sum.preemptions), " (", c(sum.victims), ") | ",
                      w.n == 0 ? "–" : absl::StrFormat("%.0f / %d", w.mean, w.p95), " | ",
                      Percent(GuaranteeMetPercent(sum.guarantee_held, sum.guarantee_wanted, HasGuarantee(first, t))),
                      " |\n");
}

}  // namespace

WaitStats WaitStatsOf(std::vector<int64_t> waits) {
  WaitStats s;
  s.n = waits.size();
  if (waits.empty()) return s;
  std::sort(waits.begin(), waits.end());
  double total = 0;
  for (int64_t w : waits) total += static_cast<double>(w);
  s.mean = total / static_cast<double>(waits.size());
  const size_t rank = (95 * waits.size() + 99) / 100;  // ⌈0.95 n⌉, in integers
  s.p95 = waits[rank - 1];
  return s;
}

std::optional<double> GuaranteeMetPercent(int64_t held, int64_t wanted, bool has_guarantee) {
  if (!has_guarantee) return std::nullopt;
  if (wanted == 0) return 100.0;
  return 100.0 * static_cast<double>(held) / static_cast<double>(wanted);
}

std::string TenantMarkdown(const std::vector<RunSummary>& runs) {
  std::string md;
  for (const std::string& trace : TracesOf(runs)) {
    for (const std::string& policy : PoliciesOf(runs)) {
      std::vector<const RunSummary*> mine;
      for (const RunSummary& r : runs) {
        if (r.trace == trace && r.policy == policy && r.tenancy.has_value()) mine.push_back(&r);
      }
      if (mine.empty()) continue;
      absl::StrAppend(&md, "### Tenants: ", trace, ", ", policy, " (", mine.size(), mine.size() == 1 ? " run" : " runs",
                      ", ", Gpus(mine.front()->capacity_milli), " GPUs)\n\n",
                      "| tenant | guaranteed GPUs | max GPUs | pods | placed | refused over max | never placed |"
                      " evicted | preemptions (victims) | time to place, s: mean / p95 | guarantee met |\n",
                      "|---|---|---|---|---|---|---|---|---|---|---|\n");
      const size_t tenants = mine.front()->tenancy->tenants.size();
      for (size_t t = 0; t < tenants; ++t) {
        const bool none = t + 1 == tenants;
        const bool any = std::any_of(mine.begin(), mine.end(),
                                     [&](const RunSummary* r) { return r->tenancy->tenants[t].submitted > 0; });
        if (none && !any) continue;  // every pod has a tenant
        absl::StrAppend(&md, Row(mine, t));
      }
      int64_t misses = 0;
      for (const RunSummary* r : mine) misses += r->tenancy->preemption_misses;
      if (misses > 0) absl::StrAppend(&md, "\n", misses, " preemptions evicted victims and still did not place the pod.\n");
      md += "\n";
    }
  }
  return md;
}

void WriteTenantsCsv(const std::vector<RunSummary>& runs, std::ostream& out) {
  out << "trace,policy,seed,tenant,guaranteed_milli,max_milli,submitted,placed,refused_over_max,never_placed,evicted,"
         "preemptions,victims,wait_mean_s,wait_p95_s,guarantee_met_percent\n";
  for (const RunSummary& r : runs) {
    if (!r.tenancy.has_value()) continue;
    for (size_t t = 0; t < r.tenancy->tenants.size(); ++t) {
      const TenantStats& s = r.tenancy->tenants[t];
      const bool tenant = t < r.tenants->size();
      auto limit = [](int64_t v) { return v == GpuQuota::kUnlimited ? std::string() : absl::StrCat(v); };
      const WaitStats w = WaitStatsOf(s.waits);
      const std::optional<double> met = GuaranteeMetPercent(s.guarantee_held, s.guarantee_wanted, HasGuarantee(r, t));
      out << r.trace << ',' << r.policy << ',' << r.seed << ',' << TenantName(r, t) << ','
          << (tenant ? limit(r.tenants->tenant(static_cast<TenantIndex>(t)).guaranteed.milli.value()) : "") << ','
          << (tenant ? limit(r.tenants->tenant(static_cast<TenantIndex>(t)).max.milli.value()) : "") << ','
          << s.submitted << ',' << s.placed << ',' << s.refused_over_max << ',' << s.never_placed << ',' << s.evicted
          << ',' << s.preemptions << ',' << s.victims << ',' << (w.n == 0 ? "" : absl::StrFormat("%.1f", w.mean)) << ','
          << (w.n == 0 ? "" : absl::StrCat(w.p95)) << ',' << (met.has_value() ? absl::StrFormat("%.1f", *met) : "")
          << '\n';
    }
  }
}

}  // namespace tessera::sim
