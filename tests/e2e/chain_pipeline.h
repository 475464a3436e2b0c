// The two-task pipeline the end-to-end tests run on the local cluster (detect -> classify on one
// CPU class, path p with a 400 ms SLO, FA2 every 2 s on a 5 s rate window), and the start every
// such test makes: its operator watching its namespace, the pipeline applied with kubectl.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "integration/harness/local_env.h"
#include "integration/harness/process.h"

namespace pipescale::testing {

// Path p's SLO.
inline constexpr int kChainSloMs = 400;

// The chain's tasks and path, as spec lines: detect -> classify on the class `cpu`, path p.
inline const std::string kChainTasks = R"(  tasks:
    - name: detect
      next: [{task: classify}]
      variants:
        - name: small
          batchSize: {max: 8}
          profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {a: 0, b: 10, c: 30}}}]
    - name: classify
      variants:
        - name: tiny
          batchSize: {max: 8}
          profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {a: 0, b: 5, c: 15}}}]
  paths: [{name: p, tasks: [detect, classify], sloMs: )" +
                                       std::to_string(kChainSloMs) + "}]\n";

// The pipeline `name` in `ns`, read from `prometheus`; `class_fields` go into the hardware class
// (", startupSeconds: 2"), `spec_lines` into the spec (each line indented two spaces).
inline std::string ChainPipeline(const std::string& name, const std::string& ns,
                                 const std::string& prometheus, const std::string& class_fields,
                                 const std::string& spec_lines) {
  return "apiVersion: pipescale.io/v1alpha1\n"
         "kind: InferencePipeline\n"
         "metadata: {name: " +
         name + ", namespace: " + ns +
         "}\n"
         "spec:\n"
         "  interval: 2s\n"
         "  router: {}\n" +
         spec_lines + "  hardwareClasses: [{name: cpu, costPerHour: 0.1" + class_fields + "}]\n" +
         kChainTasks + R"(  metrics:
    prometheusURL: )" +
         prometheus + R"(
    pathRate: 'sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[5s]))'
)";
}

// The command line of pipescale-operator watching `ns`.
inline std::vector<std::string> OperatorArgs(const LocalEnv& env, const std::string& ns) {
  return {
      PIPESCALE_OPERATOR,       "--kubeconfig", env.Var("KUBECONFIG"),         "--namespace", ns,
      "--metrics-bind-address", "127.0.0.1:0",  "--health-probe-bind-address", "127.0.0.1:0"};
}

// pipescale-operator watching `ns`, logging to `dir`/operator.log.
inline Process StartOperator(const LocalEnv& env, const std::string& ns, const std::string& dir) {
  return Process(OperatorArgs(env, ns), dir + "/operator.log");
}

// kubectl apply -f `file`; whether it succeeded.
inline bool KubectlApply(const LocalEnv& env, const std::string& file) {
  return std::system(
             ("kubectl --kubeconfig " + env.Var("KUBECONFIG") + " apply -f " + file + " >/dev/null")
                 .c_str()) == 0;
}

}  // namespace pipescale::testing
