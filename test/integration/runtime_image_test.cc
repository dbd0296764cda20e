// The image's run-time stage (Dockerfile: debian:bookworm-slim and an
// apt-get of the shared libraries) must install every Debian package whose
// library tessera-extender links: a dependency added to the build (nghttp2
// for HTTP/2) and forgotten there would build and test here and fail to start
// in the image. Read from the binary as built: ldd, then dpkg -S.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// What `command` prints on stdout; nullopt when it cannot run or, unless
// `any_exit`, exits non-zero.
std::optional<std::string> Output(const std::string& command, bool any_exit = false) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  std::array<char, 4096> chunk;
  while (size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) out.append(chunk.data(), n);
  if (pclose(pipe) != 0 && !any_exit) return std::nullopt;
  return out;
}

// The paths dpkg may know `library` by (Debian 12 merges /usr: /lib or /usr/lib).
std::vector<std::string> PathsOf(const std::string& library) {
  std::vector<std::string> paths = {library, std::filesystem::weakly_canonical(library).string()};
  for (size_t i = 0, n = paths.size(); i < n; ++i) {
    const std::string& p = paths[i];
    paths.push_back(p.rfind("/usr/", 0) == 0 ? p.substr(4) : "/usr" + p);
  }
  return paths;
}

// Path -> owning package, for every path dpkg knows of `paths` (one dpkg call:
// it reads its whole database each time).
std::map<std::string, std::string> OwningPackages(const std::vector<std::string>& paths) {
  std::string command = "dpkg -S";
  for (const std::string& p : paths) command += " '" + p + "'";
  std::map<std::string, std::string> owners;
  std::istringstream lines(Output(command, /*any_exit=*/true).value_or(""));
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(": /");  // "libssl3:amd64: /usr/lib/x86_64-linux-gnu/libssl.so.3"
    if (colon == std::string::npos) continue;
    owners[line.substr(colon + 2)] = line.substr(0, line.find(':'));
  }
  return owners;
}

// The packages the run-time stage installs: the words of its apt-get install.
std::set<std::string> RuntimePackages(const std::string& dockerfile) {
  std::ifstream in(dockerfile);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const size_t stage = all.rfind("\nFROM ");
  std::set<std::string> packages;
  if (stage == std::string::npos) return packages;
  const size_t install = all.find("apt-get install", stage);
  if (install == std::string::npos) return packages;
  std::istringstream words(all.substr(install, all.find("&&", install + 16) - install));
  for (std::string w; words >> w;) {
    if (w[0] != '-' && w != "\\" && w != "apt-get" && w != "install") packages.insert(w);
  }
  return packages;
}

TEST(RuntimeImageTest, InstallsThePackageOfEveryLibraryTheExtenderLinks) {
  if (!Output("dpkg --version")) GTEST_SKIP() << "no dpkg here: the image's packages are Debian's";
  const std::optional<std::string> ldd = Output(std::string("ldd ") + TESSERA_EXTENDER_BINARY);
  ASSERT_TRUE(ldd.has_value()) << "ldd " << TESSERA_EXTENDER_BINARY;
  const std::set<std::string> installed = RuntimePackages(std::string(TESSERA_SOURCE_DIR) + "/Dockerfile");
  ASSERT_THAT(installed, ::testing::Contains("libssl3")) << "the run-time stage's apt-get was not found";
  std::vector<std::string> libraries;
  std::istringstream lines(*ldd);
  for (std::string line; std::getline(lines, line);) {
    const size_t arrow = line.find("=> /");
    if (arrow != std::string::npos) libraries.push_back(line.substr(arrow + 3, line.find(" (", arrow) - arrow - 3));
  }
  std::vector<std::string> paths;
  for (const std::string& library : libraries) {
    for (std::string& p : PathsOf(library)) paths.push_back(std::move(p));
  }
  const std::map<std::string, std::string> owners = OwningPackages(paths);
  int packaged = 0;
  for (const std::string& library : libraries) {
    std::optional<std::string> package;
    for (const std::string& p : PathsOf(library)) {
      if (auto it = owners.find(p); it != owners.end()) package = it->second;
    }
    if (!package) continue;  // not from a package (a sanitizer runtime of a local build)
    ++packaged;
    if (*package == "libc6") continue;  // essential: in every Debian image
    EXPECT_THAT(installed, ::testing::Contains(*package)) << library << " comes from " << *package
                                                          << ", which the Dockerfile's run-time stage does not install";
  }
  EXPECT_GT(packaged, 3) << *ldd;
}

}  // namespace
}  // namespace tessera
