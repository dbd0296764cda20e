#include "k8s/gpu_topology.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/internal/errors.h"
#include "k8s/internal/json.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

using internal::ErrorList;

constexpr int32_t kMaxNvlinks = 255;
constexpr int64_t kMaxBandwidthMBps = 1'000'000;

std::string Prefix() { return absl::StrCat("annotation ", Absl(kGpuTopology), ": "); }

// --- link generations --------------------------------------------------------------

// "3", "3.0" -> 3; anything else -> nullopt.
std::optional<int> GenerationMajor(std::string_view generation) {
  if (generation.size() == 3 && generation.substr(1) == ".0") generation.remove_suffix(2);
  if (generation.size() != 1 || !std::isdigit(static_cast<unsigned char>(generation[0]))) return std::nullopt;
  return generation[0] - '0';
}

std::optional<BandwidthMBps> PcieX16(std::string_view generation) {
  switch (GenerationMajor(generation).value_or(0)) {
    case 3: return BandwidthMBps(16000);
    case 4: return BandwidthMBps(32000);
    case 5: return BandwidthMBps(64000);
    case 6: return BandwidthMBps(128000);
    default: return std::nullopt;
  }
}

// The generations a GPU model comes with, matched by substring of its
// product name, most specific first ("A100" before "A10").
struct ModelGenerations {
  std::string_view model_part;
  std::string_view nvlink;
  std::string_view pcie;
};
constexpr std::array<ModelGenerations, 16> kModelGenerations = {{
    {"B100", "5.0", "5.0"}, {"B200", "5.0", "5.0"},
    {"H100", "4.0", "5.0"}, {"H200", "4.0", "5.0"}, {"H800", "4.0", "5.0"}, {"H20", "4.0", "5.0"},
    {"A100", "3.0", "4.0"}, {"A800", "3.0", "4.0"}, {"A30", "3.0", "4.0"}, {"A40", "3.0", "4.0"},
    {"A10", "3.0", "4.0"}, {"L40", "3.0", "4.0"}, {"L4", "3.0", "4.0"},
    {"V100", "2.0", "3.0"}, {"P100", "1.0", "3.0"}, {"T4", "2.0", "3.0"},
}};

// --- cells ---------------------------------------------------------------------------

// One cell of the matrix: the GPU itself, or a link.
struct Cell {
  bool self = false;
  GpuLink link;
};

// A cell as nvidia-smi prints it: X, NV<n>, PIX, PXB, PHB, NODE, SYS (SOC);
// and the other vendors' GPU-to-GPU links alike: XGMI<n> (AMD), HCCS<n>
// (Huawei), a bare XGMI or HCCS being one link.
std::optional<Cell> ParseCellToken(std::string_view token) {
  if (token == "X") return Cell{.self = true, .link = {}};
  static constexpr std::pair<std::string_view, GpuLinkKind> kFabrics[] = {
      {"NV", GpuLinkKind::kNvLink}, {"XGMI", GpuLinkKind::kXgmi}, {"HCCS", GpuLinkKind::kHccs}};
  for (const auto& [prefix, kind] : kFabrics) {
    if (token.substr(0, prefix.size()) != prefix) continue;
    const std::string_view count = token.substr(prefix.size());
    if (count.empty() && kind == GpuLinkKind::kNvLink) return std::nullopt;  // "NV" alone: no count
    if (count.empty()) return Cell{.self = false, .link = {kind, 1}};
    int32_t links = 0;
    for (char c : count) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || links > kMaxNvlinks) return std::nullopt;
      links = links * 10 + (c - '0');
    }
    if (links < 1 || links > kMaxNvlinks) return std::nullopt;
    return Cell{.self = false, .link = {kind, links}};
  }
  static constexpr std::pair<std::string_view, GpuLinkKind> kPcie[] = {
      {"PIX", GpuLinkKind::kPix}, {"PXB", GpuLinkKind::kPxb}, {"PHB", GpuLinkKind::kPhb},
      {"NODE", GpuLinkKind::kNode}, {"SYS", GpuLinkKind::kSys}, {"SOC", GpuLinkKind::kSys}};
  for (const auto& [name, kind] : kPcie) {
    if (token == name) return Cell{.self = false, .link = {kind, 0}};
  }
  return std::nullopt;
}

constexpr std::string_view kCellHint = "expected X, NV<links>, XGMI<links>, HCCS<links>, PIX, PXB, PHB, NODE or SYS";

// The matrix as read, before the checks both forms share.
struct Matrix {
  int32_t n = 0;
  std::vector<Cell> cells;  // n × n, row-major
  std::optional<std::string> nvlink_generation;
  std::optional<std::string> pcie_generation;
  LinkBandwidths overrides;
  std::array<bool, 8> overridden{};  // by GpuLinkKind
};

// X exactly on the diagonal, and the same link both ways.
void CheckShape(const Matrix& m, ErrorList& errors) {
  for (int32_t a = 0; a < m.n; ++a) {
    for (int32_t b = 0; b < m.n; ++b) {
      const Cell& cell = m.cells[static_cast<size_t>(a * m.n + b)];
      if (a == b && !cell.self) {
        errors.Add(absl::StrCat(Prefix(), "GPU", a, "-GPU", a, " must be X (a GPU with itself), got ",
                                GpuLinkName(cell.link)));
      } else if (a != b && cell.self) {
        errors.Add(absl::StrCat(Prefix(), "GPU", a, "-GPU", b, " is X, which only a GPU with itself may be"));
      } else if (a < b) {
        const Cell& back = m.cells[static_cast<size_t>(b * m.n + a)];
        if (!back.self && back.link != cell.link) {
          errors.Add(absl::StrCat(Prefix(), "asymmetric: GPU", a, "-GPU", b, " is ", GpuLinkName(cell.link),
                                  " but GPU", b, "-GPU", a, " is ", GpuLinkName(back.link)));
        }
      }
    }
  }
}

// --- form 1: nvidia-smi topo -m ------------------------------------------------------------

// The text without terminal escape sequences (nvidia-smi underlines its
// header when writing to a terminal: ESC [ 4 m ... ESC [ 0 m).
std::string WithoutEscapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\x1b') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7e)) ++i;  // up to the final byte
    } else {
      ++i;  // a two-character escape
    }
  }
  return out;
}

// The words of `line` into `words` (reused from line to line).
void Words(std::string_view line, std::vector<std::string_view>& words) {
  words.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
}

// "GPU3" -> 3.
std::optional<int32_t> GpuLabel(std::string_view word) {
  if (word.size() < 4 || word.size() > 6 || word.substr(0, 3) != "GPU") return std::nullopt;
  int32_t index = 0;
  for (char c : word.substr(3)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    index = index * 10 + (c - '0');
  }
  return index;
}

// `nvlink: 3.0` / `pcie: 4.0` (also without the space); false if not one.
bool ReadGenerationLine(const std::vector<std::string_view>& words, Matrix& m, ErrorList& errors) {
  if (words.empty() || words[0].find(':') == std::string_view::npos) return false;
  const std::string first = absl::AsciiStrToLower(Absl(words[0]));
  std::optional<std::string>* target = nullptr;
  std::string_view key;
  for (auto [name, field] : {std::pair{std::string_view("nvlink:"), &m.nvlink_generation},
                             std::pair{std::string_view("pcie:"), &m.pcie_generation}}) {
    if (absl::StartsWith(first, Absl(name))) {
      target = field;
      key = name;
    }
  }
  if (target == nullptr) return false;
  std::string_view value = words[0].substr(key.size());
  size_t extra = 1;
  if (value.empty() && words.size() > 1) value = words[extra++];
  if (value.empty() || words.size() > extra) {
    errors.Add(absl::StrCat(Prefix(), "\"", Absl(key), "\" needs exactly one generation, e.g. \"",
                            Absl(key), " 3.0\""));
  } else {
    *target = std::string(value);
  }
  return true;
}

// What the text form's reader has seen of the GPU matrix so far.
struct TextMatrix {
  bool header = false;
  std::vector<size_t> column_of;  // column_of[c]: word position of GPU c in the header
  std::vector<bool> has_row;
};

// The header line "GPU0 GPU1 ...": sizes the matrix. False when unusable.
bool ReadHeader(const std::vector<std::string_view>& words, TextMatrix& t, Matrix& m, ErrorList& errors) {
  t.header = true;
  for (size_t w = 0; w < words.size(); ++w) {
    const std::optional<int32_t> column = GpuLabel(words[w]);
    if (!column.has_value()) continue;
    if (*column != static_cast<int32_t>(t.column_of.size())) {
      errors.Add(absl::StrCat(Prefix(), "header: column ", Absl(words[w]), " where GPU", t.column_of.size(),
                              " was expected (GPU columns must be GPU0, GPU1, ... in order)"));
      return false;
    }
    t.column_of.push_back(w);
  }
  m.n = static_cast<int32_t>(t.column_of.size());
  if (m.n > GpuTopology::kMaxGpus) {
    errors.Add(absl::StrCat(Prefix(), "describes ", m.n, " GPUs, more than the ", GpuTopology::kMaxGpus,
                            " supported"));
    return false;
  }
  m.cells.assign(static_cast<size_t>(m.n * m.n), Cell{});
  t.has_row.assign(static_cast<size_t>(m.n), false);
  return true;
}

// One row "GPUr X NV2 SYS ...".
void ReadRow(const std::vector<std::string_view>& words, int32_t row, TextMatrix& t, Matrix& m, ErrorList& errors) {
  if (row >= m.n) {
    errors.Add(absl::StrCat(Prefix(), "row GPU", row, " has no column in the header (GPU0..GPU", m.n - 1, ")"));
    return;
  }
  if (t.has_row[static_cast<size_t>(row)]) {
    errors.Add(absl::StrCat(Prefix(), "row GPU", row, " appears twice"));
    return;
  }
  t.has_row[static_cast<size_t>(row)] = true;
  if (words.size() <= t.column_of.back() + 1) {
    errors.Add(absl::StrCat(Prefix(), "row GPU", row, " has ", words.size() - 1, " cells, fewer than the ", m.n,
                            " GPU columns"));
    return;
  }
  for (int32_t c = 0; c < m.n; ++c) {
    const std::string_view word = words[t.column_of[static_cast<size_t>(c)] + 1];
    const std::optional<Cell> cell = ParseCellToken(word);
    if (!cell.has_value()) {
      errors.Add(absl::StrCat(Prefix(), "row GPU", row, ", column GPU", c, ": ", internal::Quote(word),
                              " is not a link (", Absl(kCellHint), ")"));
      continue;
    }
    m.cells[static_cast<size_t>(row * m.n + c)] = *cell;
  }
}

void ParseText(std::string_view annotation, Matrix& m, ErrorList& errors) {
  std::string without_escapes;
  if (annotation.find('\x1b') != std::string_view::npos) without_escapes = WithoutEscapes(annotation);
  const std::string_view text = without_escapes.empty() ? annotation : without_escapes;
  TextMatrix t;
  std::vector<std::string_view> words;
  size_t line_start = 0;
  while (line_start <= text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    Words(text.substr(line_start, line_end - line_start), words);
    line_start = line_end + 1;
    if (ReadGenerationLine(words, m, errors)) continue;
    if (words.empty()) continue;
    const std::optional<int32_t> label = GpuLabel(words[0]);
    if (!label.has_value()) continue;  // legend, NIC rows, prompts: not the GPU matrix
    if (!t.header) {
      if (!ReadHeader(words, t, m, errors)) return;
    } else {
      ReadRow(words, *label, t, m, errors);
    }
  }
  if (!t.header) {
    errors.Add(absl::StrCat(Prefix(),
                            "no GPU matrix: expected the output of `nvidia-smi topo -m` (a header line \"GPU0 GPU1 "
                            "...\", then a row per GPU) or JSON"));
    return;
  }
  for (int32_t gpu = 0; gpu < m.n; ++gpu) {
    if (!t.has_row[static_cast<size_t>(gpu)]) errors.Add(absl::StrCat(Prefix(), "no row for GPU", gpu));
  }
}

// --- form 2: JSON ------------------------------------------------------------------------

// A generation given as "3.0", "3" or 3.
std::optional<std::string> JsonGeneration(simdjson::dom::element value) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) return std::string(text);
  if (std::optional<int64_t> number = internal::AsInt64(value); number && *number >= 0 && *number <= 9) {
    return std::to_string(*number);
  }
  return std::nullopt;
}

void ParseJsonBandwidths(simdjson::dom::element value, Matrix& m, ErrorList& errors) {
  simdjson::dom::object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) {
    errors.Add(absl::StrCat(Prefix(), "\"bandwidthMBps\" must be an object of link kind to MB/s"));
    return;
  }
  static constexpr std::pair<std::string_view, GpuLinkKind> kKinds[] = {
      {"NVLINK", GpuLinkKind::kNvLink}, {"PIX", GpuLinkKind::kPix},   {"PXB", GpuLinkKind::kPxb},
      {"PHB", GpuLinkKind::kPhb},       {"NODE", GpuLinkKind::kNode}, {"SYS", GpuLinkKind::kSys},
      {"XGMI", GpuLinkKind::kXgmi},     {"HCCS", GpuLinkKind::kHccs}};
  for (simdjson::dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    const auto* kind = std::find_if(std::begin(kKinds), std::end(kKinds), [&](const auto& k) { return k.first == key; });
    if (kind == std::end(kKinds)) {
      errors.Add(absl::StrCat(Prefix(), "bandwidthMBps: unknown link kind ", internal::Quote(key),
                              " (expected NVLINK, XGMI, HCCS, PIX, PXB, PHB, NODE or SYS)"));
      continue;
    }
    const std::optional<int64_t> mbps = internal::AsInt64(field.value);
    if (!mbps || *mbps < 1 || *mbps > kMaxBandwidthMBps) {
      errors.Add(absl::StrCat(Prefix(), "bandwidthMBps.", Absl(key), " must be an integer in 1..", kMaxBandwidthMBps,
                              " (MB/s per direction",
                              GpuLink{.kind = kind->second, .nvlinks = 1}.is_fabric() ? ", per link)" : ")"));
      continue;
    }
    const BandwidthMBps bw(*mbps);
    switch (kind->second) {
      case GpuLinkKind::kNvLink: m.overrides.nvlink_per_link = bw; break;
      case GpuLinkKind::kPix: m.overrides.pix = bw; break;
      case GpuLinkKind::kPxb: m.overrides.pxb = bw; break;
      case GpuLinkKind::kPhb: m.overrides.phb = bw; break;
      case GpuLinkKind::kNode: m.overrides.node = bw; break;
      case GpuLinkKind::kSys: m.overrides.sys = bw; break;
      case GpuLinkKind::kXgmi: m.overrides.xgmi_per_link = bw; break;
      case GpuLinkKind::kHccs: m.overrides.hccs_per_link = bw; break;
    }
    m.overridden[static_cast<size_t>(kind->second)] = true;
  }
}

void ParseJsonLinks(simdjson::dom::element value, Matrix& m, ErrorList& errors) {
  simdjson::dom::array rows;
  if (value.get_array().get(rows) != simdjson::SUCCESS) {
    errors.Add(absl::StrCat(Prefix(), "\"links\" must be a list of rows"));
    return;
  }
  m.n = static_cast<int32_t>(rows.size());
  if (m.n < 1 || m.n > GpuTopology::kMaxGpus) {
    errors.Add(absl::StrCat(Prefix(), "describes ", m.n, " GPUs; 1..", GpuTopology::kMaxGpus, " are supported"));
    return;
  }
  m.cells.assign(static_cast<size_t>(m.n * m.n), Cell{});
  int32_t r = 0;
  for (simdjson::dom::element row_value : rows) {
    const int32_t row = r++;
    simdjson::dom::array row_cells;
    if (row_value.get_array().get(row_cells) != simdjson::SUCCESS || row_cells.size() != static_cast<size_t>(m.n)) {
      errors.Add(absl::StrCat(Prefix(), "links[", row, "] must be a list of ", m.n, " cells (the matrix is square)"));
      continue;
    }
    int32_t c = 0;
    for (simdjson::dom::element cell_value : row_cells) {
      const int32_t column = c++;
      Cell& cell = m.cells[static_cast<size_t>(row * m.n + column)];
      std::string_view token;
      if (cell_value.is_null()) {
        cell.self = true;
      } else if (std::optional<int64_t> links = internal::AsInt64(cell_value); links.has_value()) {
        if (*links < 1 || *links > kMaxNvlinks) {
          errors.Add(absl::StrCat(Prefix(), "links[", row, "][", column, "]: an NVLink count must be 1..", kMaxNvlinks,
                                  ", got ", *links, " (write the PCIe path, e.g. \"SYS\", when there is no NVLink)"));
          continue;
        }
        cell.link = {GpuLinkKind::kNvLink, static_cast<int32_t>(*links)};
      } else if (cell_value.get_string().get(token) == simdjson::SUCCESS) {
        const std::optional<Cell> parsed = ParseCellToken(token);
        if (!parsed.has_value()) {
          errors.Add(absl::StrCat(Prefix(), "links[", row, "][", column, "]: ", internal::Quote(token),
                                  " is not a link (", Absl(kCellHint), ")"));
          continue;
        }
        cell = *parsed;
      } else {
        errors.Add(absl::StrCat(Prefix(), "links[", row, "][", column,
                                "] must be an NVLink count, a link name such as \"PIX\", or \"X\""));
      }
    }
  }
}

void ParseJson(std::string_view annotation, Matrix& m, ErrorList& errors) {
  simdjson::dom::element root;
  if (auto error = internal::ParseJson(annotation).get(root); error != simdjson::SUCCESS) {
    errors.Add(absl::StrCat(Prefix(), "not valid JSON (", simdjson::error_message(error), ")"));
    return;
  }
  if (root.is_array()) return ParseJsonLinks(root, m, errors);
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) {
    errors.Add(absl::StrCat(Prefix(), "JSON must be a list of rows or an object with \"links\""));
    return;
  }
  bool has_links = false;
  for (simdjson::dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    if (key == "links") {
      has_links = true;
      ParseJsonLinks(field.value, m, errors);
    } else if (key == "nvlink" || key == "pcie") {
      std::optional<std::string> generation = JsonGeneration(field.value);
      if (!generation.has_value()) {
        errors.Add(absl::StrCat(Prefix(), "\"", Absl(key), "\" must be a generation such as \"3.0\""));
        continue;
      }
      (key == "nvlink" ? m.nvlink_generation : m.pcie_generation) = std::move(generation);
    } else if (key == "bandwidthMBps") {
      ParseJsonBandwidths(field.value, m, errors);
    }
  }
  if (!has_links) errors.Add(absl::StrCat(Prefix(), "\"links\" (the matrix) is required"));
}

// The bandwidths: defaults, then the generations named, then single kinds.
LinkBandwidths Bandwidths(const Matrix& m, LinkBandwidths b, ErrorList& errors) {
  if (m.nvlink_generation) {
    if (std::optional<BandwidthMBps> per_link = NvlinkBandwidthPerLink(*m.nvlink_generation)) {
      b.nvlink_per_link = *per_link;
    } else {
      errors.Add(absl::StrCat(Prefix(), "unknown NVLink generation ", internal::Quote(*m.nvlink_generation),
                              " (1.0 to 5.0)"));
    }
  }
  if (m.pcie_generation) {
    if (std::optional<LinkBandwidths> pcie = WithPcieGeneration(b, *m.pcie_generation)) {
      b = *pcie;
    } else {
      errors.Add(absl::StrCat(Prefix(), "unknown PCIe generation ", internal::Quote(*m.pcie_generation),
                              " (3.0 to 6.0)"));
    }
  }
  const auto take = [&](GpuLinkKind kind, BandwidthMBps LinkBandwidths::*field) {
    if (m.overridden[static_cast<size_t>(kind)]) b.*field = m.overrides.*field;
  };
  take(GpuLinkKind::kNvLink, &LinkBandwidths::nvlink_per_link);
  take(GpuLinkKind::kPix, &LinkBandwidths::pix);
  take(GpuLinkKind::kPxb, &LinkBandwidths::pxb);
  take(GpuLinkKind::kPhb, &LinkBandwidths::phb);
  take(GpuLinkKind::kNode, &LinkBandwidths::node);
  take(GpuLinkKind::kSys, &LinkBandwidths::sys);
  take(GpuLinkKind::kXgmi, &LinkBandwidths::xgmi_per_link);
  take(GpuLinkKind::kHccs, &LinkBandwidths::hccs_per_link);
  return b;
}

}  // namespace

std::optional<BandwidthMBps> NvlinkBandwidthPerLink(std::string_view generation) {
  switch (GenerationMajor(generation).value_or(0)) {
    case 1: return BandwidthMBps(20000);
    case 2:
    case 3:
    case 4: return BandwidthMBps(25000);
    case 5: return BandwidthMBps(50000);
    default: return std::nullopt;
  }
}

std::optional<LinkBandwidths> WithPcieGeneration(LinkBandwidths base, std::string_view generation) {
  const std::optional<BandwidthMBps> x16 = PcieX16(generation);
  if (!x16.has_value()) return std::nullopt;
  const int64_t full = x16->value();
  base.pix = BandwidthMBps(full);
  base.pxb = BandwidthMBps(full * 7 / 8);
  base.phb = BandwidthMBps(full * 3 / 4);
  base.node = BandwidthMBps(full * 5 / 8);
  base.sys = BandwidthMBps(full / 2);
  return base;
}

LinkBandwidths DefaultLinkBandwidths(absl::Span<const GpuDevice> gpus) {
  LinkBandwidths b;  // NVLink 2.0 + PCIe 3.0
  const auto known = std::find_if(gpus.begin(), gpus.end(), [](const GpuDevice& g) { return !g.model.empty(); });
  if (known == gpus.end()) return b;
  const std::string model = absl::AsciiStrToUpper(known->model);
  for (const ModelGenerations& g : kModelGenerations) {
    if (absl::StrContains(model, Absl(g.model_part))) {
      b.nvlink_per_link = *NvlinkBandwidthPerLink(g.nvlink);
      return *WithPcieGeneration(b, g.pcie);
    }
  }
  return b;
}

absl::StatusOr<std::shared_ptr<const GpuTopology>> ParseGpuTopology(std::string_view annotation,
                                                                     const LinkBandwidths& defaults) {
  if (annotation.size() > internal::kMaxAnnotationBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(Prefix(), "longer than ", internal::kMaxAnnotationBytes, " bytes"));
  }
  const size_t first = annotation.find_first_not_of(" \t\r\n");
  const bool json = first != std::string_view::npos && (annotation[first] == '{' || annotation[first] == '[');
  Matrix m;
  ErrorList errors;
  if (json) {
    ParseJson(annotation, m, errors);
  } else {
    ParseText(annotation, m, errors);
  }
  if (!errors.empty()) return errors.ToStatus();
  CheckShape(m, errors);
  const LinkBandwidths bandwidths = Bandwidths(m, defaults, errors);
  if (!errors.empty()) return errors.ToStatus();

  std::vector<GpuLink> links(m.cells.size());
  for (size_t i = 0; i < links.size(); ++i) links[i] = m.cells[i].link;
  absl::StatusOr<std::shared_ptr<const GpuTopology>> topology =
      GpuTopology::Create(m.n, std::move(links), bandwidths, std::string(annotation));
  if (!topology.ok()) return absl::InvalidArgumentError(absl::StrCat(Prefix(), topology.status().message()));
  return topology;
}

}  // namespace tessera::k8s
