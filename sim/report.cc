#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera::sim {
namespace {

std::optional<double> AllocAt(const RunSummary& r, int x) { return r.curve.alloc_percent[static_cast<size_t>(x)]; }
std::optional<double> FragAt(const RunSummary& r, int x) { return r.curve.fragmentation_percent[static_cast<size_t>(x)]; }

std::string MeanSd(const Stats& s) {
  if (s.n == 0) return "–";
  return absl::StrFormat("%.2f ± %.2f", s.mean, s.sd);
}

std::string SeedRange(const std::vector<RunSummary>& runs, const std::string& trace) {
  std::vector<uint64_t> seeds;
  for (const RunSummary& r : runs) {
    if (r.trace == trace && std::find(seeds.begin(), seeds.end(), r.seed) == seeds.end()) seeds.push_back(r.seed);
  }
  std::sort(seeds.begin(), seeds.end());
  if (seeds.empty()) return "no seeds";
  if (seeds.size() == 1) return absl::StrCat("seed ", seeds[0]);
  return absl::StrCat(seeds.size(), " seeds, ", seeds.front(), "–", seeds.back());
}

// The last policy against `other` on `trace`, seed by seed at Alloc %(100):
// the mean of (last − other), and on how many seeds the last allocated more.
struct SeedComparison {
  double mean_difference = 0;
  int wins = 0;
  int seeds = 0;
};
SeedComparison CompareBySeed(const std::vector<RunSummary>& runs, const std::string& trace, const std::string& other,
                             const std::string& last) {
  SeedComparison c;
  double sum = 0;
  for (const RunSummary& a : runs) {
    if (a.trace != trace || a.policy != last || !AllocAt(a, 100).has_value()) continue;
    for (const RunSummary& b : runs) {
      if (b.trace != trace || b.policy != other || b.seed != a.seed || !AllocAt(b, 100).has_value()) continue;
      const double d = *AllocAt(a, 100) - *AllocAt(b, 100);
      sum += d;
      c.wins += d > 0 ? 1 : 0;
      ++c.seeds;
    }
  }
  if (c.seeds > 0) c.mean_difference = sum / c.seeds;
  return c;
}

}  // namespace

std::vector<std::string> TracesOf(const std::vector<RunSummary>& runs) {
  std::vector<std::string> out;
  for (const RunSummary& r : runs) {
    if (std::find(out.begin(), out.end(), r.trace) == out.end()) out.push_back(r.trace);
  }
  return out;
}

std::vector<std::string> PoliciesOf(const std::vector<RunSummary>& runs) {
  std::vector<std::string> out;
  for (const RunSummary& r : runs) {
    if (std::find(out.begin(), out.end(), r.policy) == out.end()) out.push_back(r.policy);
  }
  return out;
}

Stats StatsOver(const std::vector<RunSummary>& runs, const std::string& trace, const std::string& policy,
                const std::function<std::optional<double>(const RunSummary&)>& metric) {
  std::vector<double> values;
  for (const RunSummary& r : runs) {
    if (r.trace != trace || r.policy != policy) continue;
    if (std::optional<double> v = metric(r)) values.push_back(*v);
  }
  return StatsOf(std::move(values));
}

void WriteCurvesCsv(const std::vector<RunSummary>& runs, std::ostream& out) {
  out << "trace,policy,seed,arrived_percent,alloc_percent,fragmentation_percent\n";
  for (const RunSummary& r : runs) {
    for (int x = 0; x <= kMaxArrivedPercent; ++x) {
      const std::optional<double> alloc = AllocAt(r, x), frag = FragAt(r, x);
      if (!alloc.has_value()) continue;
      out << r.trace << ',' << r.policy << ',' << r.seed << ',' << x << ',' << absl::StrFormat("%.2f", *alloc) << ','
          << (frag.has_value() ? absl::StrFormat("%.2f", *frag) : "") << '\n';
    }
  }
}

std::string MarkdownSummary(const std::vector<RunSummary>& runs) {
  const std::vector<std::string> traces = TracesOf(runs), policies = PoliciesOf(runs);
  std::string md;
  absl::StrAppend(&md, "## Alloc %(100): GPU allocation when 100% of GPU capacity has arrived, mean ± sd\n\n| trace |");
  for (const std::string& p : policies) absl::StrAppend(&md, " ", p, " |");
  absl::StrAppend(&md, "\n|---|");
  for (size_t i = 0; i < policies.size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  for (const std::string& t : traces) {
    absl::StrAppend(&md, "| ", t, " |");
    for (const std::string& p : policies) {
      absl::StrAppend(&md, " ", MeanSd(StatsOver(runs, t, p, [](const RunSummary& r) { return AllocAt(r, 100); })), " |");
    }
    absl::StrAppend(&md, "\n");
  }

  if (policies.size() >= 2) {
    const std::string& last = policies.back();
    absl::StrAppend(&md, "\n## ", last, " against each policy, seed by seed: mean of (", last,
                    " − policy) at Alloc %(100), and the seeds ", last, " won\n\n| trace |");
    for (size_t i = 0; i + 1 < policies.size(); ++i) absl::StrAppend(&md, " vs ", policies[i], " |");
    absl::StrAppend(&md, "\n|---|");
    for (size_t i = 0; i + 1 < policies.size(); ++i) absl::StrAppend(&md, "---|");
    absl::StrAppend(&md, "\n");
    for (const std::string& t : traces) {
      absl::StrAppend(&md, "| ", t, " |");
      for (size_t i = 0; i + 1 < policies.size(); ++i) {
        const SeedComparison c = CompareBySeed(runs, t, policies[i], last);
        absl::StrAppend(&md, " ", absl::StrFormat("%+.2f (%d/%d)", c.mean_difference, c.wins, c.seeds), " |");
      }
      absl::StrAppend(&md, "\n");
    }
  }

  for (const std::string& t : traces) {
    // A mixed fleet's runs (sim/fleet.h) have MIG pods: their failures get a column of their own.
    const bool mig = std::any_of(runs.begin(), runs.end(),
                                 [&](const RunSummary& r) { return r.trace == t && r.fleet == Fleet::kMixed; });
    absl::StrAppend(&md, "\n### ", t, " (", SeedRange(runs, t), mig ? ", mixed fleet" : "", ")\n\n",
                    "| policy | Alloc %(100) | median | unallocated GPUs | frag %(100) | Alloc %(130) |"
                    " failed pods per run: cpu-only / gpu-share / 1-gpu / multi-gpu", mig ? " / mig" : "",
                    " | s per run |\n", "|---|---|---|---|---|---|---|---|\n");
    for (const std::string& p : policies) {
      const Stats alloc = StatsOver(runs, t, p, [](const RunSummary& r) { return AllocAt(r, 100); });
      const Stats frag = StatsOver(runs, t, p, [](const RunSummary& r) { return FragAt(r, 100); });
      const Stats alloc130 = StatsOver(runs, t, p, [](const RunSummary& r) { return AllocAt(r, kMaxArrivedPercent); });
      const Stats seconds = StatsOver(runs, t, p, [](const RunSummary& r) { return std::optional<double>(r.seconds); });
      double gpus = 0;
      std::array<double, kPodKinds> failed{};
      size_t n = 0;
      for (const RunSummary& r : runs) {
        if (r.trace != t || r.policy != p) continue;
        gpus = static_cast<double>(r.capacity_milli) / 1000;
        for (size_t k = 0; k < kPodKinds; ++k) failed[k] += static_cast<double>(r.failed_pods[k]);
        ++n;
      }
      for (double& f : failed) f /= std::max<size_t>(n, 1);
      absl::StrAppend(&md, "| ", p, " | ", MeanSd(alloc), " | ", absl::StrFormat("%.2f", alloc.median), " | ",
                      absl::StrFormat("%.0f", (100 - alloc.mean) * gpus / 100), " | ", MeanSd(frag), " | ",
                      MeanSd(alloc130), " | ",
                      absl::StrFormat("%.0f / %.0f / %.0f / %.0f", failed[0], failed[1], failed[2], failed[3]),
                      mig ? absl::StrFormat(" / %.0f", failed[4]) : "", " | ",
                      absl::StrFormat("%.1f", seconds.mean), " |\n");
    }
  }
  return md;
}

std::string SvgPlot(const std::vector<RunSummary>& runs, const std::string& trace) {
  constexpr int kXFrom = 70, kXTo = kMaxArrivedPercent;
  constexpr double kWidth = 760, kHeight = 480, kLeft = 60, kRight = 170, kTop = 40, kBottom = 50;
  static constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                             "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const std::vector<std::string> policies = PoliciesOf(runs);

  // Mean curve per policy, over the arrived % every run of it reaches.
  std::vector<std::vector<std::pair<int, double>>> curves;
  double low = 100;
  for (const std::string& p : policies) {
    std::vector<std::pair<int, double>> curve;
    for (int x = kXFrom; x <= kXTo; ++x) {
      const Stats s = StatsOver(runs, trace, p, [x](const RunSummary& r) { return AllocAt(r, x); });
      if (s.n == 0) continue;
      curve.emplace_back(x, s.mean);
      low = std::min(low, s.mean);
    }
    curves.push_back(std::move(curve));
  }
  const double y_from = std::max(0.0, std::floor(low / 5) * 5), y_to = 100;
  const auto px = [&](double x) { return kLeft + (x - kXFrom) / (kXTo - kXFrom) * (kWidth - kLeft - kRight); };
  const auto py = [&](double y) { return kTop + (y_to - y) / (y_to - y_from) * (kHeight - kTop - kBottom); };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\">GPU allocation vs arrived workload: %s (mean over seeds)</text>\n",
      kWidth, kHeight, kWidth, kHeight, kLeft, trace);
  for (int x = kXFrom; x <= kXTo; x += 10) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
                          px(x), py(y_to), px(x), py(y_from), px(x), py(y_from) + 16, x);
  }
  const double step = (y_to - y_from) > 20 ? 5 : 2;
  for (double y = std::ceil(y_from / step) * step; y <= y_to + 1e-9; y += step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n",
                          px(kXFrom), py(y), px(kXTo), py(y), px(kXFrom) - 6, py(y) + 4, y);
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arrived GPU request, %% of capacity</text>\n"
                        "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">allocated, %% of GPU capacity</text>\n",
                        (px(kXFrom) + px(kXTo)) / 2, kHeight - 12, (py(y_from) + py(y_to)) / 2);
  for (size_t i = 0; i < policies.size(); ++i) {
    const char* colour = kColours[i % std::size(kColours)];
    std::string points;
    for (const auto& [x, y] : curves[i]) absl::StrAppendFormat(&points, "%.1f,%.1f ", px(x), py(y));
    absl::StrAppendFormat(&svg, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", colour, points);
    const double ly = kTop + 20 + 20 * static_cast<double>(i);
    const Stats at100 = StatsOver(runs, trace, policies[i], [](const RunSummary& r) { return AllocAt(r, 100); });
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\">%s (%.2f)</text>\n",
                          kWidth - kRight + 12, ly, kWidth - kRight + 32, ly, colour, kWidth - kRight + 38, ly + 4,
                          policies[i], at100.mean);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tessera::sim
