#include "scheduler/common/flag_names.h"

#include <cstring>

namespace tessera {

void AcceptDashedFlagNames(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* a = argv[i];
    if (std::strcmp(a, "--") == 0) break;
    if (std::strncmp(a, "--", 2) != 0) continue;
    for (char* c = a + 2; *c != '\0' && *c != '='; ++c) {
      if (*c == '-') *c = '_';
    }
  }
}

}  // namespace tessera
