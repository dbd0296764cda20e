// main() for the fuzz targets in a build without libFuzzer (gcc, or clang
// without TESSERA_FUZZ): runs the target once on each file named, or on each
// file of each folder named, so the seed corpora and the saved crashes replay
// as ordinary tests in every build. Arguments starting with '-' (libFuzzer's
// flags, e.g. -runs=0) are ignored, so one command line serves both mains.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0;
  int runs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.emplace_back(arg);
    }
    for (const auto& file : files) {
      failures += RunFile(file);
      ++runs;
    }
  }
  std::printf("replay: %d inputs run\n", runs);
  return failures == 0 ? 0 : 1;
}
