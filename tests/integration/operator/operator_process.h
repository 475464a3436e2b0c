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
  OperatorProcess(const std::string& ns, const std::string& name)
      : metrics_port_(testing::FreePort()), health_port_(testing::FreePort()) {
    process_ = std::make_unique<testing::Process>(
        std::vector<std::string>{
            PIPESCALE_OPERATOR, "--kubeconfig", testing::LocalEnv::Get().Var("KUBECONFIG"),
            "--namespace", ns, "--leader-elect", "--leader-election-namespace", ns,
            "--metrics-bind-address", "127.0.0.1:" + std::to_string(metrics_port_),
            "--health-probe-bind-address", "127.0.0.1:" + std::to_string(health_port_),
            "--log-format", "json"},
        ::testing::TempDir() + "/" + ns + "-" + name + ".log");
  }
  int Ready() const { return testing::HttpGet(health_port_, "/readyz").first; }
  int Healthy() const { return testing::HttpGet(health_port_, "/healthz").first; }
  // Holds the Lease and has listed what it watches (a replica standing by is Ready too).
  bool Serving() const {
    return Ready() == 200 && Metrics().find("\npipescale_leader 1") != std::string::npos;
  }
  std::string Metrics() const { return testing::HttpGet(metrics_port_, "/metrics").second; }
  testing::Process& process() { return *process_; }

 private:
  int metrics_port_;
  int health_port_;
  std::unique_ptr<testing::Process> process_;
};

}  // namespace pipescale
