#include "api/workload.h"

namespace pipescale::api {

Result<model::Workload> MakeWorkload(const model::Pipeline& pipeline,
                                     std::optional<double> total_rps,
                                     const std::map<std::string, double>& per_path_rps) {
  model::Workload workload;
  for (const auto& [name, rate] : per_path_rps) {
    bool known = false;
    for (const auto& p : pipeline.spec.paths) known = known || p.name == name;
    if (!known) return Error{ErrorKind::kInvalid, "--path-rate: unknown path \"" + name + "\""};
    if (!(rate >= 0)) {
      return Error{ErrorKind::kInvalid, "--path-rate " + name + ": rate must be >= 0"};
    }
    workload.path_rates_rps[name] = rate;
  }
  if (total_rps && !(*total_rps >= 0)) {
    return Error{ErrorKind::kInvalid, "--rate: must be >= 0"};
  }
  if (!total_rps && per_path_rps.empty()) {
    return Error{ErrorKind::kInvalid, "give a load: --rate RPS or --path-rate NAME=RPS"};
  }
  double weight = 0;
  for (const auto& p : pipeline.spec.paths) {
    if (!per_path_rps.contains(p.name)) weight += p.weight;
  }
  for (const auto& p : pipeline.spec.paths) {
    if (per_path_rps.contains(p.name)) continue;
    workload.path_rates_rps[p.name] = total_rps && weight > 0 ? *total_rps * p.weight / weight : 0;
  }
  return workload;
}

}  // namespace pipescale::api
