#include "test/control_plane_chart/chart_scheduler_config.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "test/k8s/helm/helm_cli.h"

namespace tessera::testing {

absl::StatusOr<std::string> ChartSchedulerConfigTemplate() {
  if (const std::string missing = deploy::MissingHelm(); !missing.empty()) {
    return absl::FailedPreconditionError(missing);
  }
  const std::string chart = std::string(TESSERA_SOURCE_DIR) + "/k8s/helm/tessera";
  const deploy::ProgramResult rendered = deploy::RunProgram(
      deploy::HelmBinary(), {"template", "tessera", chart, "--namespace", "tessera-system", "--show-only",
                             "templates/scheduler-configmap.yaml", "--set",
                             "tessera.image.repository=registry.example.com/tessera-extender"});
  if (rendered.exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("helm template failed: ", rendered.err));
  }
  try {
    const YAML::Node config_map = YAML::Load(rendered.out);
    YAML::Node config = YAML::Load(config_map["data"]["scheduler-config.yaml"].as<std::string>());
    config["clientConnection"]["kubeconfig"] = "@KUBECONFIG@";
    config["leaderElection"] = YAML::Node(YAML::NodeType::Map);
    config["leaderElection"]["leaderElect"] = false;
    if (!config["extenders"].IsSequence() || config["extenders"].size() != 1) {
      return absl::FailedPreconditionError(absl::StrCat("the chart renders no single extender:\n", rendered.out));
    }
    config["extenders"][0]["urlPrefix"] = "http://127.0.0.1:@EXT_PORT@@EXT_URL_PATH@";
    YAML::Emitter out;
    out << config;
    return absl::StrCat("# The chart's scheduler ConfigMap as helm renders it, made a template for up.sh\n",
                        "# (test/control_plane_chart/chart_scheduler_config.h says what was replaced).\n",
                        out.c_str(), "\n");
  } catch (const YAML::Exception& e) {
    return absl::FailedPreconditionError(absl::StrCat("the chart's scheduler ConfigMap: ", e.what(), "\n", rendered.out));
  }
}

}  // namespace tessera::testing
