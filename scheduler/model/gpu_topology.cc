#include "scheduler/model/gpu_topology.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"
#include "absl/strings/str_join.h"
#include "scheduler/model/gpu_set_search.h"

namespace tessera {
namespace {

// Above any real link (NVLink 5.0 is 50 GB/s per link); keeps every pair's
// bandwidth (≤ 255 links) inside 32 bits and every set's total inside 64.
constexpr int64_t kMaxBandwidthMBps = 1'000'000;
constexpr int32_t kMaxNvlinks = 255;

constexpr GpuSetQuality kNoSet{BandwidthMBps(-1), BandwidthMBps(-1)};

// The idle node's damage ranks, by search (topologies above kTabulatedGpus):
// how many GPUs have a larger DamageProfile. A GPU outside the idle best set
// of a size leaves that set whole, so only the GPUs inside it need a search.
std::vector<int8_t> IdleDamageRanks(const GpuTopology& topology, const std::vector<GpuSetChoice>& idle_best) {
  const int32_t n = topology.gpu_count();
  const GpuMask all = topology.all_gpus();
  std::vector<absl::InlinedVector<GpuSetQuality, 4>> profiles(static_cast<size_t>(n));
  for (int32_t gpu = 0; gpu < n; ++gpu) {
    for (int32_t size = 2; size < n; size *= 2) {
      const GpuSetChoice& best = idle_best[static_cast<size_t>(size)];
      if ((best.gpus & (GpuMask{1} << gpu)) == 0) {
        profiles[gpu].push_back(best.quality);
      } else {
        const std::optional<GpuSetChoice> left = FindBestGpuSetWithin(topology, all & ~(GpuMask{1} << gpu), size);
        profiles[gpu].push_back(left.has_value() ? left->quality : GpuSetQuality{});
      }
    }
  }
  std::vector<int8_t> ranks(profiles.size(), 0);
  for (size_t a = 0; a < profiles.size(); ++a) {
    for (size_t b = 0; b < profiles.size(); ++b) ranks[a] += profiles[b] > profiles[a] ? 1 : 0;
  }
  return ranks;
}

// For topologies up to kTabulatedGpus: the best pair and quad within every
// set of GPUs, by dynamic programming over subsets (the quality of every
// subset, then the best of each size below every subset), a few microseconds
// for 8 GPUs. DamageProfile then reads two entries per size.
std::vector<GpuSetQuality> BestWithinEverySubset(const GpuTopology& topology) {
  const int32_t n = topology.gpu_count();
  const size_t subsets = size_t{1} << n;
  std::vector<GpuSetQuality> quality(subsets);
  for (GpuMask s = 1; s < subsets; ++s) {
    const int32_t low = std::countr_zero(s);
    const GpuMask rest = s & (s - 1);
    if (rest == 0) continue;  // one GPU: no link
    int64_t slowest = std::numeric_limits<int64_t>::max(), sum = 0;
    for (GpuMask r = rest; r != 0; r &= r - 1) {
      const int64_t bw = topology.bandwidth_mbps(low, std::countr_zero(r));
      slowest = std::min(slowest, bw);
      sum += bw;
    }
    if ((rest & (rest - 1)) != 0) slowest = std::min(slowest, quality[rest].bottleneck.value());
    quality[s] = {BandwidthMBps(slowest), BandwidthMBps(quality[rest].total.value() + sum)};
  }
  std::vector<GpuSetQuality> best(2 * subsets, kNoSet);
  for (size_t i = 0; i < 2; ++i) {
    const int size = 2 << i;
    GpuSetQuality* b = &best[i * subsets];
    for (GpuMask s = 1; s < subsets; ++s) {  // subsets come after their own subsets
      const int count = std::popcount(s);
      if (count == size) {
        b[s] = quality[s];
      } else if (count > size) {
        for (GpuMask r = s; r != 0; r &= r - 1) b[s] = std::max(b[s], b[s & ~(GpuMask{1} << std::countr_zero(r))]);
      }
    }
  }
  return best;
}

}  // namespace

std::string_view GpuLinkKindName(GpuLinkKind kind) {
  switch (kind) {
    case GpuLinkKind::kNvLink: return "NV";
    case GpuLinkKind::kPix: return "PIX";
    case GpuLinkKind::kPxb: return "PXB";
    case GpuLinkKind::kPhb: return "PHB";
    case GpuLinkKind::kNode: return "NODE";
    case GpuLinkKind::kSys: return "SYS";
    case GpuLinkKind::kXgmi: return "XGMI";
    case GpuLinkKind::kHccs: return "HCCS";
  }
  return "?";
}

std::string GpuLinkName(const GpuLink& link) {
  if (link.is_fabric()) return absl::StrCat(Absl(GpuLinkKindName(link.kind)), link.nvlinks);
  return std::string(GpuLinkKindName(link.kind));
}

BandwidthMBps LinkBandwidths::Of(const GpuLink& link) const {
  switch (link.kind) {
    case GpuLinkKind::kNvLink: return nvlink_per_link * link.nvlinks;
    case GpuLinkKind::kPix: return pix;
    case GpuLinkKind::kPxb: return pxb;
    case GpuLinkKind::kPhb: return phb;
    case GpuLinkKind::kNode: return node;
    case GpuLinkKind::kSys: return sys;
    case GpuLinkKind::kXgmi: return xgmi_per_link * link.nvlinks;
    case GpuLinkKind::kHccs: return hccs_per_link * link.nvlinks;
  }
  return BandwidthMBps(0);
}

absl::StatusOr<std::shared_ptr<const GpuTopology>> GpuTopology::Create(int32_t gpu_count, std::vector<GpuLink> links,
                                                                       LinkBandwidths bandwidths, std::string source) {
  if (gpu_count < 1 || gpu_count > kMaxGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("a GPU topology has 1..", kMaxGpus, " GPUs, this one ", gpu_count));
  }
  const auto n = static_cast<size_t>(gpu_count);
  if (links.size() != n * n) {
    return absl::InvalidArgumentError(
        absl::StrCat("a topology of ", gpu_count, " GPUs needs ", n * n, " links, got ", links.size()));
  }
  for (BandwidthMBps bw : {bandwidths.nvlink_per_link, bandwidths.pix, bandwidths.pxb, bandwidths.phb,
                           bandwidths.node, bandwidths.sys}) {
    if (bw.value() < 1 || bw.value() > kMaxBandwidthMBps) {
      return absl::InvalidArgumentError(
          absl::StrCat("link bandwidths must be 1..", kMaxBandwidthMBps, " MB/s, got ", bw.value()));
    }
  }
  auto topology = std::shared_ptr<GpuTopology>(new GpuTopology());
  GpuTopology& t = *topology;
  t.gpu_count_ = gpu_count;
  t.bandwidths_ = bandwidths;
  for (int32_t a = 0; a < gpu_count; ++a) {
    for (int32_t b = 0; b < gpu_count; ++b) {
      if (a == b) continue;
      const GpuLink& link = links[a * n + b];
      const bool count_ok = link.is_fabric() ? link.nvlinks >= 1 && link.nvlinks <= kMaxNvlinks : link.nvlinks == 0;
      if (!count_ok) {
        return absl::InvalidArgumentError(absl::StrCat("GPU", a, "-GPU", b, ": a fabric link (NVLink, xGMI, HCCS) bonds 1..", kMaxNvlinks,
                                                       " links and a PCIe path none, got ", GpuLinkName(link), " with ",
                                                       link.nvlinks));
      }
      if (links[b * n + a] != link) {
        return absl::InvalidArgumentError(absl::StrCat("asymmetric: GPU", a, "-GPU", b, " is ", GpuLinkName(link),
                                                       " but GPU", b, "-GPU", a, " is ",
                                                       GpuLinkName(links[b * n + a])));
      }
      t.bandwidth_[a * kMaxGpus + b] = static_cast<uint32_t>(bandwidths.Of(link).value());
      t.has_nvlink_ = t.has_nvlink_ || link.is_fabric();
    }
  }
  t.links_ = std::move(links);
  t.source_ = std::move(source);

  // What only the topology decides, computed once here and not per request.
  t.idle_best_.resize(n + 1);
  for (int32_t k = 1; k <= gpu_count; ++k) {
    t.idle_best_[static_cast<size_t>(k)] = *FindBestGpuSetWithin(t, t.all_gpus(), k);
  }
  if (gpu_count <= kTabulatedGpus) {
    t.best_within_ = BestWithinEverySubset(t);
  } else {
    t.idle_damage_rank_ = IdleDamageRanks(t, t.idle_best_);
  }
  return std::shared_ptr<const GpuTopology>(std::move(topology));
}

int GpuTopology::CompareDamage(GpuMask free, int32_t a, int32_t b) const {
  if (gpu_count_ > kTabulatedGpus) {  // the idle node
    return idle_damage_rank_[static_cast<size_t>(a)] - idle_damage_rank_[static_cast<size_t>(b)];
  }
  // DamageProfile: the best pair, then quad, left; sizes below the free count.
  const int count = std::popcount(free);
  const size_t subsets = size_t{1} << gpu_count_;
  for (size_t i = 0; i < 2 && (2 << i) < count; ++i) {
    const GpuSetQuality& left_a = best_within_[i * subsets + (free & ~(GpuMask{1} << a))];
    const GpuSetQuality& left_b = best_within_[i * subsets + (free & ~(GpuMask{1} << b))];
    if (left_a != left_b) return left_a > left_b ? -1 : 1;
  }
  return 0;
}

bool GpuTopology::HasNvlinkWithin(GpuMask gpus) const {
  for (GpuMask a = gpus; a != 0; a &= a - 1) {
    const int32_t i = std::countr_zero(a);
    for (GpuMask b = a & (a - 1); b != 0; b &= b - 1) {
      if (link(i, std::countr_zero(b)).is_fabric()) return true;
    }
  }
  return false;
}

std::string DescribeGpuMask(GpuMask gpus) {
  std::vector<int> indices;
  for (GpuMask g = gpus; g != 0; g &= g - 1) indices.push_back(std::countr_zero(g));
  return absl::StrJoin(indices, ",");
}

}  // namespace tessera
