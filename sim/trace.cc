#include "sim/trace.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::sim {
namespace {

constexpr int64_t kMaxQuantity = int64_t{1} << 40;

// A CSV file read row by row, with fields found by header name. The traces
// are plain: no quoting, no embedded commas.
class CsvTable {
 public:
  static absl::StatusOr<CsvTable> Parse(std::string_view text, std::string_view file_name,
                                        const std::vector<std::string_view>& required) {
    CsvTable t;
    t.file_ = std::string(file_name);
    for (absl::string_view line : absl::StrSplit(Absl(text), '\n')) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      t.lines_.push_back(Std(line));
    }
    while (!t.lines_.empty() && t.lines_.back().empty()) t.lines_.pop_back();
    if (t.lines_.empty()) return absl::InvalidArgumentError(absl::StrCat(t.file_, ":1: empty file; expected a header line"));
    std::vector<std::string_view> header = Split(t.lines_[0]);
    for (size_t i = 0; i < header.size(); ++i) t.columns_.emplace(Absl(header[i]), i);
    for (std::string_view name : required) {
      if (!t.columns_.contains(Absl(name))) {
        return absl::InvalidArgumentError(absl::StrCat(t.file_, ":1: missing column \"", Absl(name),
                                                       "\"; the header has: ", Absl(t.lines_[0])));
      }
    }
    t.width_ = header.size();
    return t;
  }

  // Rows 1.. (line numbers are 1-based, the header is line 1).
  [[nodiscard]] size_t rows() const { return lines_.size() - 1; }
  [[nodiscard]] size_t line_number(size_t row) const { return row + 2; }
  [[nodiscard]] bool blank(size_t row) const { return lines_[row + 1].empty(); }

  // The fields of one row, or an error naming its line.
  absl::StatusOr<std::vector<std::string_view>> Fields(size_t row) const {
    std::vector<std::string_view> f = Split(lines_[row + 1]);
    if (f.size() != width_) {
      return Error(row, absl::StrCat("has ", f.size(), " fields, the header ", width_));
    }
    return f;
  }

  [[nodiscard]] std::optional<size_t> Column(std::string_view name) const {
    auto it = columns_.find(Absl(name));
    return it == columns_.end() ? std::nullopt : std::optional<size_t>(it->second);
  }
  [[nodiscard]] size_t RequiredColumn(std::string_view name) const { return *Column(name); }

  [[nodiscard]] absl::Status Error(size_t row, std::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(file_, ":", line_number(row), ": ", Absl(message)));
  }

  // A non-negative integer field; the error names the column and the value.
  absl::StatusOr<int64_t> Integer(size_t row, const std::vector<std::string_view>& fields, std::string_view column) const {
    const std::string_view text = fields[RequiredColumn(column)];
    int64_t value = 0;
    const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || !absl::SimpleAtoi(Absl(text), &value) || value > kMaxQuantity) {
      return Error(row, absl::StrCat(Absl(column), " must be a non-negative integer; got \"", Absl(text), "\""));
    }
    return value;
  }

 private:
  static std::vector<std::string_view> Split(std::string_view line) {
    std::vector<std::string_view> out;
    for (absl::string_view f : absl::StrSplit(Absl(line), ',')) out.push_back(Std(f));
    return out;
  }

  std::string file_;
  std::vector<std::string_view> lines_;  // views into the caller's text
  absl::flat_hash_map<std::string, size_t> columns_;
  size_t width_ = 0;
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(why) : absl::PermissionDeniedError(why);
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

template <typename T>
absl::Status SortAndCheckNames(std::vector<T>& items, std::vector<size_t>& lines, std::string_view file_name,
                               std::string_view what) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].name < items[b].name; });
  for (size_t k = 1; k < order.size(); ++k) {
    if (items[order[k]].name == items[order[k - 1]].name) {
      return absl::InvalidArgumentError(absl::StrCat(Absl(file_name), ":", lines[order[k]], ": duplicate ", Absl(what), " name \"",
                                                     items[order[k]].name, "\" (first on line ", lines[order[k - 1]], ")"));
    }
  }
  std::vector<T> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(std::move(items[i]));
  items = std::move(sorted);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<TraceNode>> ParseNodeList(std::string_view text, std::string_view file_name) {
  absl::StatusOr<CsvTable> table = CsvTable::Parse(text, file_name, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!table.ok()) return table.status();
  std::vector<TraceNode> nodes;
  std::vector<size_t> lines;
  for (size_t row = 0; row < table->rows(); ++row) {
    if (table->blank(row)) continue;
    absl::StatusOr<std::vector<std::string_view>> f = table->Fields(row);
    if (!f.ok()) return f.status();
    TraceNode n;
    n.name = std::string((*f)[table->RequiredColumn("sn")]);
    if (n.name.empty()) return table->Error(row, "sn (the node name) is empty");
    absl::StatusOr<int64_t> cpu = table->Integer(row, *f, "cpu_milli");
    absl::StatusOr<int64_t> memory = table->Integer(row, *f, "memory_mib");
    absl::StatusOr<int64_t> gpus = table->Integer(row, *f, "gpu");
    for (const auto* v : {&cpu, &memory, &gpus}) {
      if (!v->ok()) return v->status();
    }
    if (*gpus > 64) return table->Error(row, absl::StrCat("gpu must be at most 64; got ", *gpus));
    n.cpu_milli = *cpu;
    n.memory_mib = *memory;
    n.gpus = static_cast<int32_t>(*gpus);
    n.model = std::string((*f)[table->RequiredColumn("model")]);
    if (n.model == "nan") n.model.clear();  // pandas' spelling of "none"
    if (n.gpus == 0 && !n.model.empty()) {
      return table->Error(row, absl::StrCat("node \"", n.name, "\" has GPU model \"", n.model, "\" but gpu is 0"));
    }
    nodes.push_back(std::move(n));
    lines.push_back(table->line_number(row));
  }
  if (absl::Status st = SortAndCheckNames(nodes, lines, file_name, "node"); !st.ok()) return st;
  return nodes;
}

absl::StatusOr<std::vector<TracePod>> ParsePodList(std::string_view text, std::string_view file_name) {
  absl::StatusOr<CsvTable> table = CsvTable::Parse(text, file_name, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!table.ok()) return table.status();
  const std::optional<size_t> spec_column = table->Column("gpu_spec");
  const std::optional<size_t> qos_column = table->Column("qos");
  const std::optional<size_t> tenant_column = table->Column("tenant");
  // Times are read only when both columns are there: a pod's life needs both ends.
  const bool timed = table->Column("creation_time").has_value() && table->Column("deletion_time").has_value();
  std::vector<TracePod> pods;
  std::vector<size_t> lines;
  for (size_t row = 0; row < table->rows(); ++row) {
    if (table->blank(row)) continue;
    absl::StatusOr<std::vector<std::string_view>> f = table->Fields(row);
    if (!f.ok()) return f.status();
    TracePod p;
    p.name = std::string((*f)[table->RequiredColumn("name")]);
    if (p.name.empty()) return table->Error(row, "name is empty");
    absl::StatusOr<int64_t> cpu = table->Integer(row, *f, "cpu_milli");
    absl::StatusOr<int64_t> memory = table->Integer(row, *f, "memory_mib");
    absl::StatusOr<int64_t> gpus = table->Integer(row, *f, "num_gpu");
    absl::StatusOr<int64_t> milli = table->Integer(row, *f, "gpu_milli");
    for (const auto* v : {&cpu, &memory, &gpus, &milli}) {
      if (!v->ok()) return v->status();
    }
    if (*gpus > 64) return table->Error(row, absl::StrCat("num_gpu must be at most 64; got ", *gpus));
    p.cpu_milli = *cpu;
    p.memory_mib = *memory;
    p.gpus = static_cast<int32_t>(*gpus);
    // The artifact's converter: milli only for GPU pods, clipped to one GPU.
    p.gpu_milli = p.gpus == 0 ? 0 : std::min<int64_t>(*milli, 1000);
    if (p.gpus > 0 && p.gpu_milli == 0) {
      return table->Error(row, absl::StrCat("pod \"", p.name, "\" asks for ", p.gpus, " GPUs with gpu_milli 0"));
    }
    if (spec_column.has_value() && p.gpus > 0) {
      const std::string_view spec = (*f)[*spec_column];
      if (spec != "nan") {
        for (absl::string_view m : absl::StrSplit(Absl(spec), '|', absl::SkipEmpty())) p.models.emplace_back(Std(m));
        p.gpu_spec = absl::StrJoin(p.models, "|");
      }
    }
    if (qos_column.has_value() && (*f)[*qos_column] != "nan") p.qos = std::string((*f)[*qos_column]);
    if (tenant_column.has_value()) p.tenant = std::string((*f)[*tenant_column]);
    if (timed) {
      absl::StatusOr<int64_t> created = table->Integer(row, *f, "creation_time");
      absl::StatusOr<int64_t> deleted = table->Integer(row, *f, "deletion_time");
      if (!created.ok()) return created.status();
      if (!deleted.ok()) return deleted.status();
      if (*deleted < *created) {
        return table->Error(row, absl::StrCat("deletion_time ", *deleted, " is before creation_time ", *created));
      }
      p.creation_time = *created;
      p.deletion_time = *deleted;
    }
    pods.push_back(std::move(p));
    lines.push_back(table->line_number(row));
  }
  if (absl::Status st = SortAndCheckNames(pods, lines, file_name, "pod"); !st.ok()) return st;
  return pods;
}

absl::StatusOr<std::vector<TraceNode>> LoadNodeList(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseNodeList(*text, path);
}

absl::StatusOr<std::vector<TracePod>> LoadPodList(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParsePodList(*text, path);
}

}  // namespace tessera::sim
