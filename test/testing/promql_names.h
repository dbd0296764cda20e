// The metric names a PromQL expression reads, for tests that check a
// dashboard's queries against what Tessera exports. A scanner, not a full
// parser: it skips strings, label matchers ({...}), ranges and subqueries
// ([...]), numbers and durations, Grafana's variables ($x, ${x},
// $__rate_interval), and the label lists after by/without/on/ignoring/
// group_left/group_right; of the identifiers left, those followed by "(" are
// functions or aggregations and keywords are operators; the rest are metric
// names. A selector by {__name__="..."} names its metric too.
//
// Histograms: a query reads a histogram through its series, name_bucket,
// name_sum, name_count; those are the names returned, as Prometheus stores
// them (a bare histogram family name selects nothing).
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace tessera::testing {

/// The metric names `expr` selects, sorted. A Grafana variable query
/// `label_values(SELECTOR, label)` (or `query_result(EXPR)`,
/// `metrics(REGEX)` excluded) is read as its expression.
std::set<std::string> MetricNamesInPromQl(std::string_view expr);

/// The sample names of a text exposition (Tessera's /metrics): for a
/// histogram, its _bucket, _sum and _count series.
std::set<std::string> SampleNamesInExposition(std::string_view text);

}  // namespace tessera::testing
