// The data the tests read: the recorded kube-scheduler v1.26 requests and the
// Alibaba GPU trace, carried in the repository's data/ folder (data/README.md)
// so that a clone passes its own tests with nothing beside it.
//
// A missing or unreadable file is a test failure that names the path, never an
// empty string or list that a test then indexes into (which crashed the sim
// tests in a clone without the data).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tessera::testing {

/// The data folder: the source tree's data/ (TESSERA_DATA_DIR, set by
/// test/CMakeLists.txt), unless the environment's TESSERA_DATA_DIR names
/// another. test/scripts/standalone_test.sh points it at an empty folder to
/// show that every data-reading test then fails by name instead of crashing.
inline std::string DataDir() {
  const char* from_env = std::getenv("TESSERA_DATA_DIR");
  return from_env != nullptr && *from_env != '\0' ? from_env : TESSERA_DATA_DIR;
}

/// \param relative a path inside data/, e.g. "openb/openb_pod_list_default.csv".
/// \return its full path.
inline std::string DataPath(std::string_view relative) { return DataDir() + "/" + std::string(relative); }

/// \param name a file of the kube-scheduler v1.26 recording, e.g.
///        "filter-request-fullnodes.json"; "" for the folder itself.
/// \return its full path.
inline std::string FixturePath(std::string_view name) { return DataPath("kube-scheduler-v1.26/" + std::string(name)); }

/// \param name a file of the Alibaba trace, e.g. "openb_node_list_gpu_node.csv".
/// \return its full path.
inline std::string OpenbPath(std::string_view name) { return DataPath("openb/" + std::string(name)); }

/// \return the file's bytes, or NotFound (PermissionDenied for any other
///         failure to open) whose message starts with `path`.
inline absl::StatusOr<std::string> ReadDataFile(const std::string& path) {
  // A folder opens as a file and then reads as nothing at all.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": is a folder, not a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(why) : absl::PermissionDeniedError(why);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": cannot read"));
  return text.str();
}

/// For a test that goes on without the file: records a failure naming `path`
/// and returns "" when the file cannot be read. A test that needs the bytes
/// ASSERTs on ReadDataFile instead.
inline std::string ReadFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadDataFile(path);
  if (!text.ok()) {
    ADD_FAILURE() << text.status().message();
    return "";
  }
  return *std::move(text);
}

}  // namespace tessera::testing
