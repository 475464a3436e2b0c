#include "flags.h"

#include <cstdlib>
#include <sstream>

#include "common/flags.h"

namespace pipescale::operator_main {
namespace {

// Concurrent reconciles: more than this only contend for the apiserver and the two cores an
// operator is given.
constexpr int kMaxWorkers = 256;

constexpr const char* kUsage = R"(pipescale-operator: autoscales InferencePipelines

  --kubeconfig PATH                  kubeconfig; default $KUBECONFIG, in-cluster, ~/.kube/config
  --namespace NS[,NS...]             namespaces to watch; default all
  --metrics-bind-address ADDR        Prometheus metrics (default :8080)
  --health-probe-bind-address ADDR   /healthz and /readyz (default :8081)
  --leader-elect                     run one active replica, chosen by a Lease
  --leader-election-namespace NS     where the Lease lives (default: the config's namespace)
  --leader-election-id NAME          the Lease's name (default pipescale-operator)
  --prometheus-url URL               for pipelines without spec.metrics.prometheusURL
  --router-cluster-role NAME         what each pipeline's router is bound to (default
                                     pipescale-router, installed by the chart)
  --log-format text|json             (default text)
  --workers N                        concurrent reconciles, 1-256 (default 2)
  --metrics-max-age SECONDS          how old an answer to the default (all-pipelines) queries
                                     may be before Prometheus is asked again (default 2, the
                                     chart's scrape interval; 0 asks at every reconcile)
  --kube-max-answer-mib N            the largest apiserver answer read (a list), 1-16384
                                     (default 256); a larger one is an error, retried
  --version                          print the version and exit
Each flag may also come from the environment as PIPESCALE_<FLAG>, e.g. PIPESCALE_LOG_FORMAT.
)";

std::string EnvName(const std::string& flag) {
  std::string out = "PIPESCALE_";
  for (char c : flag.substr(2)) out += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return out;
}

}  // namespace

Result<Flags> ParseFlags(int argc, char** argv) {
  Flags f;
  std::vector<std::pair<std::string, std::string>> given;
  // Environment first, so flags override it.
  for (const char* flag :
       {"--kubeconfig", "--namespace", "--metrics-bind-address", "--health-probe-bind-address",
        "--leader-elect", "--leader-election-namespace", "--leader-election-id", "--prometheus-url",
        "--router-cluster-role", "--log-format", "--workers", "--metrics-max-age",
        "--kube-max-answer-mib"}) {
    if (const char* v = std::getenv(EnvName(flag).c_str()); v != nullptr)
      given.emplace_back(flag, v);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return Error{ErrorKind::kNotFound, kUsage};
    if (arg == "--version") {
      return Error{ErrorKind::kNotFound, std::string("pipescale-operator ") + PIPESCALE_VERSION};
    }
    std::string value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg == "--leader-elect") {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Error{ErrorKind::kInvalid, arg + ": needs a value"};
    }
    given.emplace_back(arg, value);
  }
  for (const auto& [flag, value] : given) {
    if (flag == "--kubeconfig") {
      f.kubeconfig = value;
    } else if (flag == "--namespace") {
      f.namespaces.clear();
      std::stringstream ss(value);
      for (std::string ns; std::getline(ss, ns, ',');) {
        if (!ns.empty()) f.namespaces.push_back(ns);
      }
    } else if (flag == "--metrics-bind-address") {
      f.metrics_bind_address = value;
    } else if (flag == "--health-probe-bind-address") {
      f.health_probe_bind_address = value;
    } else if (flag == "--leader-elect") {
      if (value != "true" && value != "false") {
        return Error{ErrorKind::kInvalid, "--leader-elect: must be true or false, got " + value};
      }
      f.leader_elect = value == "true";
    } else if (flag == "--leader-election-namespace") {
      f.leader_election_namespace = value;
    } else if (flag == "--leader-election-id") {
      f.leader_election_id = value;
    } else if (flag == "--prometheus-url") {
      f.prometheus_url = value;
    } else if (flag == "--router-cluster-role") {
      f.router_cluster_role = value;
    } else if (flag == "--log-format") {
      if (value != "text" && value != "json") {
        return Error{ErrorKind::kInvalid, "--log-format: must be text or json, got " + value};
      }
      f.log_format = value;
    } else if (flag == "--workers") {
      auto workers = ParseInteger(flag, value, 1, kMaxWorkers);
      if (!workers) return workers.error();
      f.workers = *workers;
    } else if (flag == "--metrics-max-age") {
      auto age = ParseNumber(flag, value, 0, 3600);
      if (!age) return age.error();
      f.metrics_max_age_seconds = *age;
    } else if (flag == "--kube-max-answer-mib") {
      auto mib = ParseInteger(flag, value, 1, 16384);
      if (!mib) return mib.error();
      f.kube_max_answer_bytes = static_cast<size_t>(*mib) << 20;
    } else {
      return Error{ErrorKind::kInvalid, "unknown flag " + flag + "\n\n" + kUsage};
    }
  }
  return f;
}

}  // namespace pipescale::operator_main
