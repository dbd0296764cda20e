#include "scheduler/common/yaml_load.h"

#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "yaml-cpp/eventhandler.h"

namespace tessera::yaml_internal {
namespace {

// Thrown by the checker from inside yaml-cpp's parser, the only way to stop
// it mid-document; caught in LoadYamlDocuments, so nothing escapes.
struct LimitExceeded {
  YamlLoadError error;
};

// Walks the events of every document, counting what the tree would hold.
class LimitChecker final : public YAML::EventHandler {
 public:
  explicit LimitChecker(const YamlLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    document_start_ = mark;
    // Anchors are numbered per document by yaml-cpp.
    anchor_nodes_.clear();
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    Leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchor_nodes_.find(anchor);
    // yaml-cpp knows the anchor (it refuses unknown ones) but its node is not
    // finished: the alias is inside the node it names.
    if (it == anchor_nodes_.end()) {
      throw LimitExceeded{{mark, "an alias may not refer to a node that contains it"}};
    }
    Count(mark, it->second);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

  /// Where the last document began.
  [[nodiscard]] const YAML::Mark& document_start() const { return document_start_; }

 private:
  struct Frame {
    YAML::anchor_t anchor;
    int64_t nodes_before;
  };

  void Count(const YAML::Mark& mark, int64_t n) {
    nodes_ += n;
    if (nodes_ > limits_.max_nodes) {
      throw LimitExceeded{
          {mark, absl::StrFormat("more than %d nodes (an alias counts as the nodes it names)", limits_.max_nodes)}};
    }
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Count(mark, 1);
    if (anchor != YAML::NullAnchor) anchor_nodes_[anchor] = 1;
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Count(mark, 1);
    if (static_cast<int>(open_.size()) >= limits_.max_depth) {
      throw LimitExceeded{{mark, absl::StrFormat("nested deeper than %d levels", limits_.max_depth)}};
    }
    open_.push_back({anchor, nodes_ - 1});
  }
  void Close() {
    const Frame frame = open_.back();
    open_.pop_back();
    if (frame.anchor != YAML::NullAnchor) anchor_nodes_[frame.anchor] = nodes_ - frame.nodes_before;
  }

  const YamlLimits& limits_;
  YAML::Mark document_start_ = YAML::Mark::null_mark();
  int64_t nodes_ = 0;
  std::vector<Frame> open_;
  // Nodes under each finished anchor, itself included.
  absl::flat_hash_map<YAML::anchor_t, int64_t> anchor_nodes_;
};

// What stands at `mark`, for "unexpected ','".
std::string TokenAt(std::string_view text, const YAML::Mark& mark) {
  if (mark.pos < 0 || static_cast<size_t>(mark.pos) >= text.size()) return "end of file";
  return absl::StrFormat("'%s'", absl::Utf8SafeCEscape(absl::string_view(text.data() + mark.pos, 1)));
}

// Runs the checker over every document; nullopt when the text is within limits.
std::optional<YamlLoadError> Check(std::string_view text, const YamlLimits& limits) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  LimitChecker checker(limits);

  try {
    // The parser moves on between documents unless it is stuck on a token
    // that no rule consumes: then the next document starts where this one did.
    std::optional<int> previous_start;
    for (int documents = 1; parser.HandleNextDocument(checker); ++documents) {
      const YAML::Mark& start = checker.document_start();
      if (previous_start == start.pos) {
        return YamlLoadError{start, absl::StrFormat("unexpected %s", TokenAt(text, start))};
      }
      previous_start = start.pos;
      if (documents > limits.max_documents) {
        return YamlLoadError{start, absl::StrFormat("more than %d YAML documents", limits.max_documents)};
      }
    }
    return std::nullopt;
  } catch (const LimitExceeded& e) {
    return e.error;
  } catch (const YAML::Exception& e) {
    return YamlLoadError{e.mark, e.msg};
  }
}

}  // namespace

YamlDocuments LoadYamlDocuments(std::string_view text, const YamlLimits& limits) {
  YamlDocuments out;
  if (text.size() > limits.max_bytes) {
    out.error = YamlLoadError{YAML::Mark::null_mark(),
                              absl::StrFormat("larger than %d bytes", limits.max_bytes)};
    return out;
  }
  if (std::optional<YamlLoadError> error = Check(text, limits)) {
    out.error = std::move(error);
    return out;
  }
  try {
    out.documents = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    // Unreachable: the check ran the same parser over the same bytes.
    out.documents.clear();
    out.error = YamlLoadError{e.mark, e.msg};
  }
  return out;
}

}  // namespace tessera::yaml_internal
