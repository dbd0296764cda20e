#include "scheduler/model/mig_geometry.h"

#include <algorithm>
#include <array>
#include <bit>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// Start bits: slices 0-6 (a 1g instance never starts at 7: the GPU has 7
// compute slices), even slices, 0/2/4, 0/4, and 0 only.
constexpr SliceMask kAnyButLast = 0b0111'1111;
constexpr SliceMask kEven = 0b0101'0101;
constexpr SliceMask kZeroTwoFour = 0b0001'0101;
constexpr SliceMask kZeroFour = 0b0001'0001;
constexpr SliceMask kZero = 0b0000'0001;

// The nominal memory a profile's name gives: "3g.40gb" is 40 GiB.
constexpr MemoryMiB MemoryOfName(std::string_view name) {
  int64_t gib = 0;
  for (size_t i = name.find('.') + 1; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    gib = gib * 10 + (name[i] - '0');
  }
  return MemoryMiB(gib * 1024);
}

// The six-profile family every 8-slice GPU here offers, named by its memory.
constexpr std::array<MigProfile, 6> Family(std::string_view one, std::string_view one_double, std::string_view two,
                                           std::string_view three, std::string_view four, std::string_view seven) {
  return {{
      {one, 1, 1, kAnyButLast, MemoryOfName(one)},
      {one_double, 1, 2, kEven, MemoryOfName(one_double)},
      {two, 2, 2, kZeroTwoFour, MemoryOfName(two)},
      {three, 3, 4, kZeroFour, MemoryOfName(three)},
      {four, 4, 4, kZero, MemoryOfName(four)},
      {seven, 7, 8, kZero, MemoryOfName(seven)},
  }};
}

static_assert(MemoryOfName("3g.40gb") == MemoryMiB(40960) && MemoryOfName("7g.141gb") == MemoryMiB(144384));

// nvidia-smi mig -lgipp per model. The memory is the name's: the driver
// gives an instance a little less (the H200's eighths are ~17.6 GB, "18gb").
constexpr auto kA100_40 = Family("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb");
constexpr auto kA100_80 = Family("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb");
constexpr auto kH100_80 = kA100_80;  // the same placements and sizes
constexpr auto kH200_141 = Family("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb");

const MigGeometry kGeometries[] = {
    {"A100-40GB", kA100_40},
    {"A100-80GB", kA100_80},
    {"H100-80GB", kH100_80},
    {"H200-141GB", kH200_141},
};

}  // namespace

const MigProfile* MigGeometry::Find(std::string_view name) const {
  for (const MigProfile& p : profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

MilliGpu MigComputeOfName(std::string_view name) {
  if (name.size() < 2 || name[0] < '1' || name[0] > '7' || name[1] != 'g') return MilliGpu(0);
  return MilliGpu((name[0] - '0') * 1000 / 7);
}

MemoryMiB MigMemoryOfName(std::string_view name) {
  if (name.find('.') == std::string_view::npos) return MemoryMiB(0);
  return MemoryOfName(name);
}

absl::Span<const MigGeometry> AllMigGeometries() { return kGeometries; }

const MigGeometry* FindMigGeometry(std::string_view product) {
  // Spellings differ by source ("NVIDIA A100 80GB PCIe", "NVIDIA-A100-SXM4-80GB"),
  // but every part looked for is one word: compared ignoring case, in place.
  // Placement does not ask it per request: a published GpuState carries its
  // table's id (MigGeometryId).
  const auto has = [&](std::string_view part) {
    if (part.size() > product.size()) return false;
    for (size_t at = 0; at + part.size() <= product.size(); ++at) {
      if (absl::EqualsIgnoreCase(Absl(product.substr(at, part.size())), Absl(part))) return true;
    }
    return false;
  };
  if (has("H200")) return &kGeometries[3];
  if (has("H100")) {
    // The H100 NVL (94 GB) and H100 96 GB split differently: no table yet.
    if (has("NVL") || has("94GB") || has("96GB")) return nullptr;
    return &kGeometries[2];
  }
  if (has("A100")) return has("80GB") ? &kGeometries[1] : &kGeometries[0];
  return nullptr;
}

SliceMask FreeMigStarts(const MigProfile& profile, SliceMask taken) {
  SliceMask free = 0;
  for (int32_t s = 0; s < kMigSlices; ++s) {
    if ((profile.starts >> s & 1u) != 0 && (profile.SlicesAt(s) & taken) == 0) free |= static_cast<SliceMask>(1u << s);
  }
  return free;
}

absl::Status CheckMigPlacement(const MigProfile& profile, int32_t start, SliceMask taken) {
  if (start < 0 || start >= kMigSlices || (profile.starts >> start & 1u) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", Absl(profile.name), " instance cannot start at slice ", start));
  }
  if ((profile.SlicesAt(start) & taken) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("a ", Absl(profile.name), " instance at slice ", start,
                                                      " would overlap another instance"));
  }
  return absl::OkStatus();
}

int32_t MaxMoreMigInstances(const MigProfile& profile, SliceMask taken) {
  // Every table's starts are multiples of the profile's size (the tests check
  // it), so two placements of one profile are the same or do not overlap:
  // each free start is one more instance, whatever order they are made in.
  return std::popcount(FreeMigStarts(profile, taken));
}

int64_t MigGeometryLoss(const MigGeometry& geometry, absl::Span<const int64_t> weights, SliceMask held,
                        SliceMask add) {
  const auto after = static_cast<SliceMask>(held | add);
  int64_t loss = 0;
  for (size_t p = 0; p < weights.size() && p < geometry.profiles.size(); ++p) {
    const MigProfile& q = geometry.profiles[p];
    loss += weights[p] * (MaxMoreMigInstances(q, held) - MaxMoreMigInstances(q, after));
  }
  return loss;
}

SliceMask MigHeldSlices(const MigGeometry& geometry, absl::Span<const MigInstance> instances, uint8_t held_starts) {
  SliceMask held = 0;
  if (held_starts == 0) return held;
  for (const MigInstance& m : instances) {
    if (m.start < 0 || m.start >= kMigSlices || (held_starts >> m.start & 1u) == 0) continue;
    if (const MigProfile* p = geometry.Find(m.profile); p != nullptr) held |= p->SlicesAt(m.start);
  }
  return held;
}

uint8_t MigGeometryId(const MigGeometry* geometry) {
  if (geometry == nullptr) return kNoMigGeometry;
  return static_cast<uint8_t>(1 + (geometry - AllMigGeometries().data()));
}

const MigGeometry* MigGeometryOfId(uint8_t id) {
  const absl::Span<const MigGeometry> all = AllMigGeometries();
  if (id == 0 || id == kNoMigGeometry || id > all.size()) return nullptr;
  return &all[id - 1];
}

uint8_t MigFreeProfileSlots(const MigGeometry& geometry, absl::Span<const MigInstance> instances,
                            uint8_t held_starts) {
  uint8_t free = 0;
  for (const MigInstance& m : instances) {
    if (m.start < 0 || m.start >= kMigSlices || (held_starts >> m.start & 1u) != 0) continue;
    for (size_t p = 0; p < geometry.profiles.size() && p < 8; ++p) {
      if (geometry.profiles[p].name == m.profile) free = static_cast<uint8_t>(free | (1u << p));
    }
  }
  return free;
}

}  // namespace tessera
