#include "extender/service/gpu_map_page.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <numeric>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "extender/service/html_text.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/model/gpu_topology.h"

namespace tessera {
namespace {

using html::AppendEscaped;

// ---- the query --------------------------------------------------------------

enum class Field { kAny, kNode, kModel, kPod, kTenant, kIs };

struct Term {
  Field field = Field::kAny;
  std::string value;  // lower case
};

std::vector<Term> ParseTerms(std::string_view q) {
  std::vector<Term> terms;
  const std::string lower = html::AsciiLower(q);
  std::string_view rest = lower;
  constexpr std::pair<std::string_view, Field> kFields[] = {
      {"node:", Field::kNode}, {"model:", Field::kModel}, {"pod:", Field::kPod},
      {"tenant:", Field::kTenant}, {"is:", Field::kIs}};
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) break;
    rest = rest.substr(start);
    const size_t end = std::min(rest.find_first_of(" \t"), rest.size());
    std::string_view word = rest.substr(0, end);
    rest = rest.substr(end);
    Term term;
    for (const auto& [prefix, field] : kFields) {
      if (word.substr(0, prefix.size()) == prefix) {
        term.field = field;
        word = word.substr(prefix.size());
        break;
      }
    }
    term.value = std::string(word);
    if (!term.value.empty()) terms.push_back(std::move(term));
  }
  return terms;
}

// Whether `haystack` contains `needle` (lower case), ignoring ASCII case.
bool Contains(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return true;
  const auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
  });
  return it != haystack.end();
}

// ---- who holds what -----------------------------------------------------------

// The name the page gives a pod's tenant: the policy's tenant, else the
// pod's tenant label, else its namespace.
// The policy's tenant of `pod`; null without one.
const std::string* PolicyTenant(const PodHolding& pod, const TenantSet* tenants) {
  if (tenants == nullptr || tenants->empty()) return nullptr;
  const std::optional<TenantIndex> t = tenants->TenantOf(pod.namespace_name(), pod.tenant_label);
  return t.has_value() ? &tenants->tenants()[*t].name : nullptr;
}

std::string TenantName(const PodHolding& pod, const TenantSet* tenants) {
  if (const std::string* name = PolicyTenant(pod, tenants)) return *name;
  if (!pod.tenant_label.empty()) return pod.tenant_label;
  return absl::StrCat("namespace ", Absl(pod.namespace_name()));
}

bool Unhealthy(const NodeState& n) {
  return std::any_of(n.inventory.gpus.begin(), n.inventory.gpus.end(), [](const GpuDevice& g) { return !g.healthy; });
}

GpuUsage UsageOf(const NodeState& n, int32_t index) {
  return index >= 0 && static_cast<size_t>(index) < n.usage.size() ? n.usage[static_cast<size_t>(index)] : GpuUsage{};
}

bool MatchesTerm(const NodeState& n, const Term& t, const TenantSet* tenants) {
  const auto model = [&] {
    return std::any_of(n.inventory.gpus.begin(), n.inventory.gpus.end(),
                       [&](const GpuDevice& g) { return Contains(g.model, t.value); });
  };
  const auto pod = [&] {
    return std::any_of(n.pods.begin(), n.pods.end(), [&](const PodHolding& p) { return Contains(p.pod_key, t.value); });
  };
  const auto tenant = [&] {
    return std::any_of(n.pods.begin(), n.pods.end(), [&](const PodHolding& p) {
      if (Contains(p.tenant_label, t.value) || Contains(p.namespace_name(), t.value)) return true;
      const std::string* policy_tenant = PolicyTenant(p, tenants);
      return policy_tenant != nullptr && Contains(*policy_tenant, t.value);
    });
  };
  switch (t.field) {
    case Field::kNode: return Contains(n.name, t.value);
    case Field::kModel: return model();
    case Field::kPod: return pod();
    case Field::kTenant: return tenant();
    case Field::kIs:
      if (t.value == "unhealthy") return Unhealthy(n);
      if (t.value == "problem") return !n.problems.empty() || !n.inventory_error.ok();
      if (t.value == "free") {
        return std::any_of(n.inventory.gpus.begin(), n.inventory.gpus.end(),
                           [&](const GpuDevice& g) { return g.healthy && UsageOf(n, g.index).idle(); });
      }
      return false;
    case Field::kAny: return Contains(n.name, t.value) || model() || pod() || tenant();
  }
  return false;
}

bool Matches(const NodeState& n, const std::vector<Term>& terms, const TenantSet* tenants) {
  return std::all_of(terms.begin(), terms.end(), [&](const Term& t) { return MatchesTerm(n, t, tenants); });
}

// ---- colours and NVLink groups -------------------------------------------------------

// Tenants' colours on one page: distinct ones in the legend's order, then
// a hue from the name (FNV-1a: the same on every page and after a restart).
constexpr std::string_view kTenantColours[] = {"#4e79a7", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948",
                                               "#9c755f", "#ff9da7", "#86bcb6", "#d4a6c8", "#8cd17d", "#a0cbe8"};

class Palette {
 public:
  void Add(const std::string& name) {
    if (colours_.contains(name)) return;
    colours_.emplace(name, colours_.size() < std::size(kTenantColours) ? std::string(kTenantColours[colours_.size()])
                                                                       : Hashed(name));
  }
  [[nodiscard]] std::string Of(const std::string& name) const {
    const auto it = colours_.find(name);
    return it != colours_.end() ? it->second : Hashed(name);
  }

 private:
  static std::string Hashed(std::string_view name) {
    uint32_t h = 2166136261u;
    for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    return absl::StrCat("hsl(", h % 360, ",55%,", 40 + (h / 360) % 25, "%)");
  }
  absl::flat_hash_map<std::string, std::string> colours_;
};

constexpr std::string_view kGroupColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                              "#8c564b", "#e377c2", "#17becf", "#bcbd22"};

// Per GPU position of the inventory, its NVLink group (0, 1, ...: GPUs
// joined by NVLink, directly or through others), or -1 when no NVLink
// joins it to another GPU or the topology is unknown.
std::vector<int> NvlinkGroups(const NodeInventory& inv) {
  std::vector<int> group(inv.gpus.size(), -1);
  const GpuTopology* topo = inv.topology.get();
  if (topo == nullptr) return group;
  const int32_t n = topo->gpu_count();
  std::vector<int32_t> root(static_cast<size_t>(n));
  std::iota(root.begin(), root.end(), 0);
  const auto find = [&](int32_t a) {
    while (root[a] != a) a = root[a] = root[root[a]];
    return a;
  };
  std::vector<bool> linked(static_cast<size_t>(n), false);
  for (int32_t a = 0; a < n; ++a) {
    for (int32_t b = a + 1; b < n; ++b) {
      if (!topo->link(a, b).is_fabric()) continue;
      root[find(a)] = find(b);
      linked[a] = linked[b] = true;
    }
  }
  std::vector<int> id_of_root(static_cast<size_t>(n), -1);
  int next = 0;
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    const int32_t d = inv.gpus[i].index;
    if (d < 0 || d >= n || !linked[d]) continue;
    int& id = id_of_root[find(d)];
    if (id < 0) id = next++;
    group[i] = id;
  }
  return group;
}

// "A: GPU 0 1 2 3 · B: GPU 4 5 6 7", or why there is none.
std::string DescribeGroups(const NodeInventory& inv, const std::vector<int>& group) {
  if (inv.topology == nullptr) {
    return inv.topology_error.ok() ? "topology unknown" : "topology rejected (see problems)";
  }
  std::string out;
  for (int g = 0;; ++g) {
    std::string members;
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] == g) absl::StrAppend(&members, " ", inv.gpus[i].index);
    }
    if (members.empty()) break;
    absl::StrAppend(&out, out.empty() ? "" : " · ", std::string(1, static_cast<char>('A' + g % 26)), ": GPU",
                    members);
  }
  return out.empty() ? "no NVLink" : absl::StrCat("NVLink ", out);
}

// ---- one node -------------------------------------------------------------------

// Geometry of a node's picture: one row per GPU, a bar of kBarWidth pixels
// for 1000 milli.
constexpr int kRow = 22;
constexpr int kBarX = 58;
constexpr int kBarWidth = 360;
constexpr int kTextX = kBarX + kBarWidth + 8;
constexpr int kSvgWidth = 630;

int PixelsOf(int64_t milli) { return static_cast<int>(std::clamp<int64_t>(milli, 0, 1000) * kBarWidth / 1000); }

// One pod's share of one GPU.
struct Segment {
  const PodHolding* pod;
  const GpuShare* share;
};

// Per inventory position, the pods' shares on that GPU, in the node's pod order.
std::vector<std::vector<Segment>> SegmentsByGpu(const NodeState& n) {
  std::vector<std::vector<Segment>> by_gpu(n.inventory.gpus.size());
  for (const PodHolding& pod : n.pods) {
    for (const GpuShare& share : pod.assignment.gpus) {
      for (size_t i = 0; i < n.inventory.gpus.size(); ++i) {
        if (n.inventory.gpus[i].index == share.index) by_gpu[i].push_back({&pod, &share});
      }
    }
  }
  return by_gpu;
}

// What drawing a node reads besides the node.
struct DrawContext {
  const TenantSet* tenants;
  const Palette& palette;
};

void AppendShare(std::string& out, const Segment& s, int x, int y, const DrawContext& draw) {
  const std::string tenant = TenantName(*s.pod, draw.tenants);
  const int w = std::max(1, PixelsOf(s.share->guaranteed.value()));
  absl::StrAppend(&out, "<rect class=\"share\" x=\"", x, "\" y=\"", y + 2, "\" width=\"", w, "\" height=\"13\" fill=\"",
                  draw.palette.Of(tenant), "\"", s.pod->in_flight ? " stroke-dasharray=\"3 2\" stroke=\"#333\"" : "",
                  "><title>");
  AppendEscaped(out, s.pod->pod_key, kMaxTextBytes);
  out += " · tenant ";
  AppendEscaped(out, tenant, kMaxTextBytes);
  absl::StrAppend(&out, " · ", s.share->guaranteed.value(), " milli");
  if (s.share->limit > s.share->guaranteed) absl::StrAppend(&out, " (burst to ", s.share->limit.value(), ")");
  if (s.share->memory.value() > 0) absl::StrAppend(&out, " · ", s.share->memory.value(), " MiB");
  if (s.pod->in_flight) out += " · bind in flight";
  out += "</title></rect>";
}

// One GPU's row: index, NVLink group, the pods' shares, the burst their
// limits allow beyond them, and the numbers.
void AppendGpuRow(std::string& out, const GpuDevice& gpu, const GpuUsage& usage, const std::vector<Segment>& segments,
                  int group, int y, const DrawContext& draw) {
  absl::StrAppend(&out, "<text x=\"2\" y=\"", y + 13, "\">GPU", gpu.index, "</text>");
  if (group >= 0) {
    const char letter = static_cast<char>('A' + group % 26);
    absl::StrAppend(&out, "<rect class=\"nvlink\" x=\"40\" y=\"", y + 1, "\" width=\"12\" height=\"15\" rx=\"2\" fill=\"",
                    Absl(kGroupColours[group % std::size(kGroupColours)]), "\"><title>NVLink group ", std::string(1, letter),
                    "</title></rect><text class=\"nvl\" x=\"43\" y=\"", y + 13, "\">", std::string(1, letter), "</text>");
  }
  absl::StrAppend(&out, "<rect class=\"gpu", gpu.healthy ? "" : " unhealthy", "\" x=\"", kBarX, "\" y=\"", y + 2,
                  "\" width=\"", kBarWidth, "\" height=\"13\"", gpu.healthy ? "" : " fill=\"url(#tessera-hatch)\"",
                  "><title>GPU ", gpu.index, " ");
  AppendEscaped(out, gpu.model, kMaxTextBytes);
  absl::StrAppend(&out, gpu.healthy ? "" : " · UNHEALTHY: no pod is placed on it", "</title></rect>");
  int x = kBarX;
  int64_t rest_milli = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    if (k < kMaxPodsDrawnPerGpu) {
      AppendShare(out, segments[k], x, y, draw);
      x += std::max(1, PixelsOf(segments[k].share->guaranteed.value()));
    } else {
      rest_milli += segments[k].share->guaranteed.value();
    }
  }
  if (segments.size() > kMaxPodsDrawnPerGpu) {
    absl::StrAppend(&out, "<rect class=\"share more\" x=\"", x, "\" y=\"", y + 2, "\" width=\"",
                    std::max(1, PixelsOf(rest_milli)), "\" height=\"13\" fill=\"#777\"><title>+",
                    segments.size() - kMaxPodsDrawnPerGpu, " more pods, ", rest_milli, " milli</title></rect>");
  }
  // Burst: what the pods' limits let them take beyond their guarantees.
  const int64_t burst = usage.limit.value() - usage.guaranteed.value();
  if (burst > 0) {
    const int from = PixelsOf(usage.guaranteed.value());
    const int to = PixelsOf(usage.limit.value());
    absl::StrAppend(&out, "<rect class=\"burst\" x=\"", kBarX + from, "\" y=\"", y + 16, "\" width=\"",
                    std::max(1, to - from), "\" height=\"3\"><title>burst: limits reach ", usage.limit.value(),
                    " milli, ", burst, " above the guarantees</title></rect>");
  }
  absl::StrAppend(&out, "<text x=\"", kTextX, "\" y=\"", y + 13, "\"", gpu.healthy ? "" : " class=\"bad\"", ">");
  if (!gpu.healthy) out += "UNHEALTHY ";
  absl::StrAppend(&out, usage.guaranteed.value(), "/1000");
  if (usage.limit > usage.guaranteed) absl::StrAppend(&out, " ⇡", usage.limit.value());
  if (gpu.memory_known()) absl::StrAppend(&out, " · ", usage.memory.value() / 1024, "/", gpu.memory.value() / 1024, " GiB");
  out += "</text>";
}

void AppendNode(std::string& out, const NodeState& n, const DrawContext& draw) {
  const std::vector<int> group = NvlinkGroups(n.inventory);
  const std::vector<std::vector<Segment>> segments = SegmentsByGpu(n);
  int64_t held = 0;
  int healthy = 0;
  for (const GpuDevice& g : n.inventory.gpus) {
    held += UsageOf(n, g.index).guaranteed.value();
    healthy += g.healthy ? 1 : 0;
  }
  out += "<section class=\"node\"><h3>";
  AppendEscaped(out, n.name, kMaxTextBytes);
  out += "</h3><p class=\"facts\">";
  if (!n.inventory.gpus.empty()) {
    AppendEscaped(out, n.inventory.gpus.front().model.empty() ? "model unknown" : n.inventory.gpus.front().model,
                  kMaxTextBytes);
  }
  absl::StrAppend(&out, " × ", n.inventory.gpus.size(), " · ", held, "/", healthy * 1000, " milli held · ",
                  n.pods.size(), " pods · ");
  AppendEscaped(out, DescribeGroups(n.inventory, group), kMaxTextBytes);
  out += "</p>";
  std::vector<std::string> problems = n.problems;
  if (!n.inventory_error.ok()) problems.insert(problems.begin(), std::string(n.inventory_error.message()));
  if (!n.inventory.topology_error.ok()) problems.push_back(std::string(n.inventory.topology_error.message()));
  for (size_t k = 0; k < problems.size() && k < 4; ++k) {
    out += "<p class=\"problem\">";
    AppendEscaped(out, problems[k], kMaxTextBytes);
    out += "</p>";
  }
  if (n.inventory.gpus.empty()) {
    out += "<p class=\"facts\">no GPUs</p></section>\n";
    return;
  }
  absl::StrAppend(&out, "<svg class=\"gpus\" xmlns=\"http://www.w3.org/2000/svg\" width=\"", kSvgWidth, "\" height=\"",
                  n.inventory.gpus.size() * kRow + 2, "\" role=\"img\">");
  for (size_t i = 0; i < n.inventory.gpus.size(); ++i) {
    const GpuDevice& g = n.inventory.gpus[i];
    AppendGpuRow(out, g, UsageOf(n, g.index), segments[i], group[i], static_cast<int>(i) * kRow, draw);
  }
  out += "</svg></section>\n";
}

// ---- the page -----------------------------------------------------------------------

constexpr std::string_view kHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Tessera GPU map</title>
<style>
body{font:13px system-ui,sans-serif;margin:12px 18px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:18px 0 6px}h3{font-size:13px;margin:0}
.summary{color:#444;margin:2px 0 8px}.nodes{display:flex;flex-wrap:wrap;gap:8px}
.node{background:#fff;border:1px solid #ddd;border-radius:4px;padding:6px 8px}
.facts{margin:2px 0 4px;color:#555}.problem,.bad{color:#b00020;fill:#b00020;font-weight:600}
svg.gpus text{font:11px ui-monospace,monospace;fill:#333}svg.gpus text.nvl{fill:#fff;font-weight:700}
svg.gpus text.bad{fill:#b00020}rect.gpu{fill:#e6eaee;stroke:#c9ced4}rect.gpu.unhealthy{fill:url(#tessera-hatch);stroke:#b00020}rect.burst{fill:#f0a030}
.legend span{display:inline-block;margin:0 10px 4px 0}.sw{display:inline-block;width:11px;height:11px;
vertical-align:-1px;margin-right:4px;border-radius:2px}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top;
text-align:left}nav a,nav span{margin-right:10px}input[name=q]{width:420px}
</style></head><body>
<svg width="0" height="0" style="position:absolute"><defs><pattern id="tessera-hatch" width="6" height="6"
patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f6d5d9"/>
<line x1="0" y1="0" x2="0" y2="6" stroke="#b00020" stroke-width="3"/></pattern></defs></svg>
)html";

// Totals over the whole snapshot, whatever the query.
void AppendSummary(std::string& out, const ClusterSnapshot& s, const GpuMapInputs& in, size_t pending) {
  int64_t held = 0;
  size_t unhealthy = 0, in_flight = 0, pods = 0;
  for (NodeIndex i = 0; i < s.node_count(); ++i) {
    const NodeState& n = s.node(i);
    for (const GpuDevice& g : n.inventory.gpus) {
      held += UsageOf(n, g.index).guaranteed.value();
      unhealthy += g.healthy ? 0 : 1;
    }
    pods += n.pods.size();
    for (const PodHolding& p : n.pods) in_flight += p.in_flight ? 1 : 0;
  }
  out += "<h1>Tessera GPU map</h1><p class=\"summary\">";
  absl::StrAppend(&out, s.node_count(), " nodes · ", s.gpu_count(), " GPUs (", unhealthy, " unhealthy) · ", held,
                  "/", s.healthy_capacity().milli.value(), " milli held by ", pods, " pods (", in_flight,
                  " binds in flight) · ", pending, " pods refused everywhere · snapshot ", s.generation(), " · ");
  AppendEscaped(out, in.source, kMaxTextBytes);
  out += "</p>\n";
}

void AppendSearch(std::string& out, const GpuMapQuery& query) {
  out += "<form method=\"get\" action=\"\"><input name=\"q\" value=\"";
  AppendEscaped(out, query.q, kMaxQueryBytes);
  out += "\" placeholder=\"node:…  model:a100  pod:…  tenant:…  is:unhealthy  is:free\">"
         "<button>search</button> <a href=\"?\">all</a></form>\n";
}

std::string PageLink(const GpuMapQuery& query, size_t page) {
  std::string href = "?q=";
  html::AppendUrlEncoded(href, query.q);
  absl::StrAppend(&href, "&amp;page=", page, "&amp;per_page=", query.per_page);
  return href;
}

void AppendPager(std::string& out, const GpuMapQuery& query, size_t page, size_t pages, size_t first, size_t last,
                 size_t matched, size_t total) {
  out += "<nav>";
  if (page > 1) absl::StrAppend(&out, "<a href=\"", PageLink(query, page - 1), "\">« previous</a>");
  absl::StrAppend(&out, "<span>page ", page, " of ", pages, " · nodes ", matched == 0 ? 0 : first + 1, "–", last,
                  " of ", matched, matched == total ? "" : absl::StrCat(" matching (", total, " in all)"), "</span>");
  if (page < pages) absl::StrAppend(&out, "<a href=\"", PageLink(query, page + 1), "\">next »</a>");
  out += "</nav>\n";
}

// The tenants holding GPUs on the page's nodes, with their colours.
void AppendLegend(std::string& out, const ClusterSnapshot& s, const std::vector<NodeIndex>& shown,
                  const TenantSet* tenants, Palette& palette) {
  std::vector<std::pair<std::string, int64_t>> held;  // by first appearance
  for (const NodeIndex i : shown) {
    for (const PodHolding& p : s.node(i).pods) {
      const std::string name = TenantName(p, tenants);
      auto it = std::find_if(held.begin(), held.end(), [&](const auto& h) { return h.first == name; });
      if (it == held.end()) it = held.insert(held.end(), {name, 0});
      for (const GpuShare& share : p.assignment.gpus) it->second += share.guaranteed.value();
    }
  }
  out += "<p class=\"legend\">";
  for (const auto& h : held) palette.Add(h.first);
  for (size_t k = 0; k < held.size() && k < 64; ++k) {
    absl::StrAppend(&out, "<span><i class=\"sw\" style=\"background:", palette.Of(held[k].first), "\"></i>");
    AppendEscaped(out, held[k].first, kMaxTextBytes);
    absl::StrAppend(&out, " ", held[k].second, " milli</span>");
  }
  out += "<span><i class=\"sw\" style=\"background:#f0a030\"></i>burst (limits above guarantees)</span>"
         "<span><i class=\"sw\" style=\"background:#f6d5d9;border:2px solid #b00020\"></i>unhealthy</span>"
         "<span>A B …: NVLink groups</span></p>\n";
}

bool RefusalMatches(const FilterRefusal& r, const std::vector<Term>& terms) {
  return std::all_of(terms.begin(), terms.end(), [&](const Term& t) {
    if (Contains(r.pod, t.value) || Contains(r.tenant_label, t.value) || Contains(r.request, t.value) ||
        Contains(r.error, t.value)) {
      return true;
    }
    return std::any_of(r.reasons.begin(), r.reasons.end(), [&](const FilterRefusal::Reason& why) {
      return Contains(why.code, t.value) || Contains(why.example, t.value) || Contains(why.node, t.value);
    });
  });
}

void AppendRefusal(std::string& out, const FilterRefusal& r, absl::Time now) {
  out += "<tr><td>";
  AppendEscaped(out, r.pod, kMaxTextBytes);
  out += "</td><td>";
  AppendEscaped(out, r.tenant_label.empty() ? "-" : r.tenant_label, kMaxTextBytes);
  out += "</td><td>";
  AppendEscaped(out, r.request, kMaxTextBytes);
  absl::StrAppend(&out, "</td><td>", absl::ToInt64Seconds(now - r.at), " s ago</td><td>", r.nodes, "</td><td>");
  if (!r.error.empty()) {
    out += "<b>";
    AppendEscaped(out, r.error, kMaxTextBytes * 2);
    out += "</b>";
  }
  for (const FilterRefusal::Reason& why : r.reasons) {
    out += "<div><b>";
    AppendEscaped(out, why.code, kMaxTextBytes);
    absl::StrAppend(&out, "</b> on ", why.nodes, why.nodes == 1 ? " node" : " nodes");
    if (!why.node.empty()) {
      out += ", e.g. ";
      AppendEscaped(out, why.node, kMaxTextBytes);
      out += ": ";
      AppendEscaped(out, why.example, kMaxTextBytes * 2);
    }
    out += "</div>";
  }
  out += "</td></tr>\n";
}

// The pods filter refused on every node, less those the snapshot shows
// holding GPUs (bound since).
std::vector<const FilterRefusal*> StillPending(const GpuMapInputs& in, const ClusterSnapshot& s) {
  absl::flat_hash_set<std::string_view> keys;
  for (const FilterRefusal& r : in.refusals) keys.insert(r.key);
  absl::flat_hash_set<std::string_view> bound;
  for (NodeIndex i = 0; i < s.node_count() && !keys.empty(); ++i) {
    for (const PodHolding& p : s.node(i).pods) {
      if (keys.contains(p.uid)) bound.insert(p.uid);
    }
  }
  std::vector<const FilterRefusal*> pending;
  for (const FilterRefusal& r : in.refusals) {
    if (!bound.contains(r.key)) pending.push_back(&r);
  }
  return pending;
}

// The pending pods matching the query.
void AppendPending(std::string& out, const std::vector<const FilterRefusal*>& pending, const std::vector<Term>& terms,
                   absl::Time now) {
  std::vector<const FilterRefusal*> listed;
  size_t matched = 0;
  for (const FilterRefusal* r : pending) {
    if (!RefusalMatches(*r, terms)) continue;
    if (++matched <= kMaxPendingListed) listed.push_back(r);
  }
  absl::StrAppend(&out, "<h2 id=\"pending\">Pods that fit nowhere (", matched, ")</h2>\n");
  if (listed.empty()) {
    out += "<p class=\"summary\">none: every pod filter saw lately fitted somewhere</p>\n";
    return;
  }
  out += "<table class=\"pending\"><tr><th>pod</th><th>tenant label</th><th>asks</th><th>refused</th>"
         "<th>nodes</th><th>why (filter's reasons)</th></tr>\n";
  for (const FilterRefusal* r : listed) AppendRefusal(out, *r, now);
  out += "</table>\n";
  if (matched > listed.size()) absl::StrAppend(&out, "<p>… and ", matched - listed.size(), " more</p>\n");
}

size_t ReadNumber(std::string_view text, size_t fallback) {
  size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty() ? value : fallback;
}

}  // namespace

GpuMapQuery ParseGpuMapQuery(std::string_view target) {
  GpuMapQuery query;
  query.q = html::QueryParameter(target, "q", kMaxQueryBytes);
  query.page = std::max<size_t>(1, ReadNumber(html::QueryParameter(target, "page", 20), 1));
  query.per_page = std::clamp<size_t>(ReadNumber(html::QueryParameter(target, "per_page", 20), query.per_page), 1,
                                      kMaxNodesPerPage);
  return query;
}

std::string RenderGpuMapPage(const GpuMapInputs& in, const GpuMapQuery& query) {
  static const ClusterSnapshot kEmpty;
  const ClusterSnapshot& s = in.snapshot != nullptr ? *in.snapshot : kEmpty;
  const std::vector<Term> terms = ParseTerms(query.q.substr(0, kMaxQueryBytes));
  std::vector<NodeIndex> matched;
  for (NodeIndex i = 0; i < s.node_count(); ++i) {
    if (Matches(s.node(i), terms, in.tenants)) matched.push_back(i);
  }
  const size_t per_page = std::clamp<size_t>(query.per_page, 1, kMaxNodesPerPage);
  const size_t pages = std::max<size_t>(1, (matched.size() + per_page - 1) / per_page);
  const size_t page = std::clamp<size_t>(query.page, 1, pages);
  const size_t first = std::min(matched.size(), (page - 1) * per_page);
  const size_t last = std::min(matched.size(), first + per_page);
  const std::vector<NodeIndex> shown(matched.begin() + static_cast<ptrdiff_t>(first),
                                     matched.begin() + static_cast<ptrdiff_t>(last));
  std::string out;
  out.reserve(4096 + shown.size() * 4096);
  out += kHead;
  const std::vector<const FilterRefusal*> pending = StillPending(in, s);
  AppendSummary(out, s, in, pending.size());
  AppendSearch(out, query);
  Palette palette;
  AppendLegend(out, s, shown, in.tenants, palette);
  GpuMapQuery effective = query;
  effective.per_page = per_page;
  AppendPager(out, effective, page, pages, first, last, matched.size(), s.node_count());
  out += "<div class=\"nodes\">\n";
  const DrawContext draw{.tenants = in.tenants, .palette = palette};
  for (const NodeIndex i : shown) AppendNode(out, s.node(i), draw);
  out += "</div>\n";
  AppendPending(out, pending, terms, in.now);
  out += "</body></html>\n";
  return out;
}

}  // namespace tessera
