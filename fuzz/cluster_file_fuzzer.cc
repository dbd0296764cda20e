// The cluster file (config/cluster_file.h): nodes and pods for running
// without Kubernetes, through the same inventory and assignment parsers as
// API objects, then published as a snapshot.
#include "config/cluster_file.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  ClusterModel model;
  if (LoadClusterText(fuzz::AsText(data, size), "cluster.yaml", model).ok()) model.Publish();
  return 0;
}
