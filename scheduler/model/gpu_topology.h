// How the GPUs of one node are linked to each other: NVLink, or a PCIe path of
// some length, with the bandwidth each link gives.
//
// The model mirrors `nvidia-smi topo -m`: for every pair of GPUs, either a
// bonded set of N NVLinks (`NV#`) or the PCIe relationship (`PIX`, `PXB`,
// `PHB`, `NODE`, `SYS`, nearest first). A bandwidth per direction, in MB/s and
// an integer like every other quantity, turns each pair into one number, so
// that "the best-connected set of GPUs" is a well-defined maximum (see
// gpu_set_search.h). k8s/gpu_topology.h parses the node annotation into it.
//
// A GpuTopology is immutable and shared (shared_ptr<const>) by every snapshot
// and request that sees the node: what depends only on the topology — the best
// set an idle node offers for each size — is computed once, when it is built.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/model/quantity.h"

namespace tessera {

struct MegabytesPerSecondTag {};
/// A bandwidth per direction in megabytes (10^6 bytes) per second.
using BandwidthMBps = Quantity<MegabytesPerSecondTag>;

/// The path between two GPUs, as `nvidia-smi topo -m` names it.
enum class GpuLinkKind : uint8_t {
  kNvLink,  ///< `NV#`: a bonded set of # NVLinks (directly or through NVSwitch).
  kPix,     ///< `PIX`: at most one PCIe bridge (one PCIe switch).
  kPxb,     ///< `PXB`: several PCIe bridges, not through the host bridge.
  kPhb,     ///< `PHB`: through a PCIe host bridge (typically the CPU).
  kNode,    ///< `NODE`: between PCIe host bridges of one NUMA node.
  kSys,     ///< `SYS`: across the SMP interconnect between NUMA nodes (QPI/UPI). Also `SOC`.
  kXgmi,    ///< `XGMI#`: # bonded AMD Infinity Fabric (xGMI) links, GPU to GPU.
  kHccs,    ///< `HCCS#`: # bonded Huawei Cache Coherence System links, NPU to NPU.
};

/// The nvidia-smi name of a kind ("NV" for NVLink, without the count; "XGMI"
/// and "HCCS" for the other vendors' GPU-to-GPU links).
std::string_view GpuLinkKindName(GpuLinkKind kind);

/// One pair's link.
struct GpuLink {
  GpuLinkKind kind = GpuLinkKind::kSys;
  /// Links bonded between the pair for a GPU-to-GPU fabric (NVLink, xGMI,
  /// HCCS; ≥ 1), else 0. Named for NVLink, the first of them.
  int32_t nvlinks = 0;

  [[nodiscard]] bool is_nvlink() const { return kind == GpuLinkKind::kNvLink; }
  /// A direct GPU-to-GPU fabric link of any vendor: NVLink, xGMI or HCCS.
  [[nodiscard]] bool is_fabric() const {
    return kind == GpuLinkKind::kNvLink || kind == GpuLinkKind::kXgmi || kind == GpuLinkKind::kHccs;
  }
  bool operator==(const GpuLink&) const = default;
};

/// "NV2", "PIX", "XGMI1", ...: the link as nvidia-smi prints it (and the other vendors' links alike).
std::string GpuLinkName(const GpuLink& link);

/// Bandwidth per direction of each kind of path on one node. PCIe paths are
/// not all equal: every bridge a transfer crosses costs bandwidth, and P2P
/// across sockets is the slowest. The values rank the kinds; only their
/// order and ratios matter to placement, so nominal figures serve.
struct LinkBandwidths {
  BandwidthMBps nvlink_per_link{25000};  ///< One NVLink (2.0, 3.0 and 4.0: 25 GB/s per direction).
  BandwidthMBps pix{16000};              ///< PCIe 3.0 x16 through one switch: the full link.
  BandwidthMBps pxb{14000};
  BandwidthMBps phb{12000};
  BandwidthMBps node{10000};
  BandwidthMBps sys{8000};
  BandwidthMBps xgmi_per_link{64000};  ///< One xGMI link (MI300X: 64 GB/s per direction).
  BandwidthMBps hccs_per_link{28000};  ///< One HCCS link (Ascend 910B: 56 GB/s both ways).

  /// The bandwidth of `link` (NVLink, xGMI, HCCS: per link × links).
  [[nodiscard]] BandwidthMBps Of(const GpuLink& link) const;
  bool operator==(const LinkBandwidths&) const = default;
};

/// A set of GPUs as a bit mask: bit i is the GPU with device index i.
using GpuMask = uint32_t;

/// How well a set of GPUs is connected, compared lexicographically: first the
/// slowest link between two of its GPUs (it bounds a ring all-reduce: every
/// step waits for the slowest hop), then the sum over all pairs (more
/// bandwidth for tree and all-to-all traffic). Sets of fewer than two GPUs
/// have no link and quality {0, 0}.
struct GpuSetQuality {
  BandwidthMBps bottleneck{0};
  BandwidthMBps total{0};
  auto operator<=>(const GpuSetQuality&) const = default;
};

/// A set of GPUs and its quality.
struct GpuSetChoice {
  GpuMask gpus = 0;
  GpuSetQuality quality;
  bool operator==(const GpuSetChoice&) const = default;
};

class GpuTopology {
 public:
  /// Masks are 32 bits, but the exact search is sized for up to 16 GPUs
  /// (a DGX-2 / HGX-2): the largest nodes built.
  static constexpr int32_t kMaxGpus = 16;

  /// \param gpu_count GPUs 0..gpu_count-1, 1..kMaxGpus.
  /// \param links row-major gpu_count × gpu_count; entry [a*n+b] is the link
  ///   from a to b; must equal [b*n+a]; diagonal entries are ignored.
  /// \param bandwidths what each kind of link gives; every value positive
  ///   and at most 10^6 MB/s.
  /// \param source the annotation the topology was parsed from, kept so that
  ///   the same text need not be parsed again (may be empty).
  /// \return InvalidArgument naming the first problem.
  static absl::StatusOr<std::shared_ptr<const GpuTopology>> Create(int32_t gpu_count, std::vector<GpuLink> links,
                                                                   LinkBandwidths bandwidths,
                                                                   std::string source = {});

  [[nodiscard]] int32_t gpu_count() const { return gpu_count_; }
  /// Every GPU of the topology.
  [[nodiscard]] GpuMask all_gpus() const { return (GpuMask{1} << gpu_count_) - 1; }
  /// The link between GPUs `a` and `b` (a != b, both < gpu_count()).
  [[nodiscard]] const GpuLink& link(int32_t a, int32_t b) const { return links_[a * gpu_count_ + b]; }
  /// The bandwidth between GPUs `a` and `b`, in MB/s; the search's inner loop.
  [[nodiscard]] uint32_t bandwidth_mbps(int32_t a, int32_t b) const { return bandwidth_[a * kMaxGpus + b]; }
  [[nodiscard]] const LinkBandwidths& bandwidths() const { return bandwidths_; }
  /// Whether any pair of GPUs is joined by NVLink (or its peers of other
  /// vendors, xGMI and HCCS: everywhere below, "NVLink" means any of them).
  [[nodiscard]] bool has_nvlink() const { return has_nvlink_; }
  /// Whether some pair inside `gpus` is joined by NVLink (or xGMI, HCCS).
  [[nodiscard]] bool HasNvlinkWithin(GpuMask gpus) const;
  [[nodiscard]] const std::string& source() const { return source_; }

  /// The best set of `k` GPUs an idle node of this topology offers (the
  /// yardstick of the node score), for 1 ≤ k ≤ gpu_count().
  [[nodiscard]] const GpuSetChoice& IdleBest(int32_t k) const { return idle_best_[static_cast<size_t>(k)]; }

  /// Up to this many GPUs, the best pair and quad within every set of GPUs
  /// are tabulated (2 × 2^8 entries), so CompareDamage answers for any free
  /// GPUs; above, only for the idle node.
  static constexpr int32_t kTabulatedGpus = 8;

  /// Whether CompareDamage answers for the free GPUs `free`.
  [[nodiscard]] bool KnowsDamage(GpuMask free) const {
    return gpu_count_ <= kTabulatedGpus || free == all_gpus();
  }
  /// With the GPUs `free` free, whether taking GPU `a` damages the best sets
  /// left (DamageProfile in gpu_set_search.h) less than taking GPU `b`:
  /// negative when less, 0 when as much, positive when more.
  /// \pre KnowsDamage(free); `a` and `b` are in `free`.
  [[nodiscard]] int CompareDamage(GpuMask free, int32_t a, int32_t b) const;

 private:
  GpuTopology() = default;

  int32_t gpu_count_ = 0;
  std::vector<GpuLink> links_;
  std::array<uint32_t, kMaxGpus * kMaxGpus> bandwidth_{};
  LinkBandwidths bandwidths_;
  bool has_nvlink_ = false;
  std::string source_;
  std::vector<GpuSetChoice> idle_best_;        // by k; [0] unused
  // Up to kTabulatedGpus GPUs: [i << n | gpus], the best quality of 2 << i
  // GPUs within `gpus` (a quality of -1 when there are fewer).
  std::vector<GpuSetQuality> best_within_;
  // Above: on the idle node, how many GPUs do less damage than each GPU.
  std::vector<int8_t> idle_damage_rank_;
};

/// The GPUs of `gpus` in index order ("0,1,4,5").
std::string DescribeGpuMask(GpuMask gpus);

}  // namespace tessera
