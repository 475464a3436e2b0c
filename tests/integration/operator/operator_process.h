// The pipescale-operator binary as a child process of an integration test, with its health and
// metrics ports; shared by the operator's integration tests (PIPESCALE_OPERATOR is its path).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "integration/harness/local_env.h"
#include "integration/harness/process.h"

namespace pipescale {

class OperatorProcess {
 public:
  // An operator that watches `ns` alone and leads through a Lease in it (one of several
  // replicas, each named `name`).
  OperatorProcess(const std::string& ns, const std::string& name)
      : OperatorProcess(ns + "-" + name,
                        std::vector<std::string>{"--namespace", ns, "--leader-elect",
                                                 "--leader-election-namespace", ns}) {}

  // An operator with `flags` besides its kubeconfig, ports and log format: with no --namespace
  // among them, it watches every namespace. Its log is <TempDir>/`log_name`.log.
  static std::unique_ptr<OperatorProcess> WithFlags(const std::string& log_name,
                                                    const std::vector<std::string>& flags) {
    return std::unique_ptr<OperatorProcess>(new OperatorProcess(log_name, flags));
  }

  int Ready() const { return testing::HttpGet(health_port_, "/readyz").first; }
  int Healthy() const { return testing::HttpGet(health_port_, "/healthz").first; }
  // Holds the Lease and has listed what it watches (a replica standing by is Ready too).
  bool Serving() const {
    return Ready() == 200 && Metrics().find("\npipescale_leader 1") != std::string::npos;
  }
  std::string Metrics() const { return testing::HttpGet(metrics_port_, "/metrics").second; }
  // Reconciles it has run, whatever their result, by its own count: how many looks it has taken
  // (a test that shows something did not happen waits for enough of them, not for seconds).
  double Reconciles() const {
    const std::string m = Metrics();
    const std::string series = "\ncontroller_runtime_reconcile_total{";
    double n = 0;
    for (size_t at = m.find(series); at != std::string::npos; at = m.find(series, at + 1)) {
      n += std::stod(m.substr(m.find("} ", at) + 2));
    }
    return n;
  }
  testing::Process& process() { return *process_; }

 private:
  OperatorProcess(const std::string& log_name, const std::vector<std::string>& flags)
      : metrics_port_(testing::FreePort()), health_port_(testing::FreePort()) {
    std::vector<std::string> argv = {PIPESCALE_OPERATOR,
                                     "--kubeconfig",
                                     testing::LocalEnv::Get().Var("KUBECONFIG"),
                                     "--metrics-bind-address",
                                     "127.0.0.1:" + std::to_string(metrics_port_),
                                     "--health-probe-bind-address",
                                     "127.0.0.1:" + std::to_string(health_port_),
                                     "--log-format",
                                     "json"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    process_ =
        std::make_unique<testing::Process>(argv, ::testing::TempDir() + "/" + log_name + ".log");
  }

  int metrics_port_;
  int health_port_;
  std::unique_ptr<testing::Process> process_;
};

}  // namespace pipescale
