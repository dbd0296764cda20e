// What a set of runs reports: every curve as CSV, a Markdown summary
// (mean ± sd over seeds), and per trace an SVG plot of the mean curves.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/experiment.h"

namespace tessera::sim {

/// One row per run and arrived %: trace,policy,seed,arrived_percent,alloc_percent,fragmentation_percent.
void WriteCurvesCsv(const std::vector<RunSummary>& runs, std::ostream& out);

/// Markdown: a traces × policies table of Alloc%(100), then per trace a
/// table of every metric. Traces and policies appear in the order of the
/// first run naming them.
std::string MarkdownSummary(const std::vector<RunSummary>& runs);

/// A self-contained SVG of `trace`'s mean allocation curves, one line per
/// policy, arrived % 70..130 (where policies part) against allocation %.
std::string SvgPlot(const std::vector<RunSummary>& runs, const std::string& trace);

/// The traces and policies of `runs`, in order of first appearance.
std::vector<std::string> TracesOf(const std::vector<RunSummary>& runs);
std::vector<std::string> PoliciesOf(const std::vector<RunSummary>& runs);

/// Stats of a metric over the runs of one (trace, policy), skipping runs
/// where it has no value.
Stats StatsOver(const std::vector<RunSummary>& runs, const std::string& trace, const std::string& policy,
                const std::function<std::optional<double>(const RunSummary&)>& metric);

}  // namespace tessera::sim
