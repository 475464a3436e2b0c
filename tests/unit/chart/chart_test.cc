// The Helm chart, rendered by the real helm with the values users change, read back as YAML:
// RBAC is exactly what the operator needs in each mode, the Deployment is locked down, optional
// parts appear only where they can work, and wrong values fail at install time naming the value.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/deployment.h"
#include "support/shell.h"

namespace {

using pipescale::testing::RunShell;
using pipescale::testing::ShellResult;
namespace api = pipescale::api;
namespace model = pipescale::model;

const std::string kRoot = PIPESCALE_SOURCE_DIR;

struct Rendered {
  int exit_code = 0;
  std::string output;
  std::vector<YAML::Node> objects;

  // The one object of this kind (and name, when given); fails the test when absent.
  YAML::Node Get(const std::string& kind, const std::string& name = "") const {
    for (const auto& o : objects) {
      if (o["kind"].as<std::string>() == kind &&
          (name.empty() || o["metadata"]["name"].as<std::string>() == name)) {
        return o;
      }
    }
    ADD_FAILURE() << "no " << kind << " " << name << " in:\n" << output;
    return YAML::Node();
  }
  int Count(const std::string& kind) const {
    int n = 0;
    for (const auto& o : objects) n += o["kind"].as<std::string>() == kind;
    return n;
  }
};

std::string Helm() {
  static const std::string helm = [] {
    std::string dir = RunShell(kRoot + "/hack/install-tools.sh 2>/dev/null").out;
    while (!dir.empty() && dir.back() == '\n') dir.pop_back();
    return "HOME=$(mktemp -d) " + dir + "/bin/helm";
  }();
  return helm;
}

Rendered Template(const std::string& args) {
  Rendered r;
  const ShellResult run =
      RunShell(Helm() + " template rel " + kRoot + "/helm/pipescale --namespace ops " + args);
  r.exit_code = run.code;
  r.output = run.out;
  if (r.exit_code == 0) {
    for (const auto& doc : YAML::LoadAll(r.output)) {
      if (doc.IsMap()) r.objects.push_back(doc);
    }
  }
  return r;
}

// "group/resource: verb,verb" for each rule, to compare rule sets as text.
std::set<std::string> Rules(const YAML::Node& role) {
  std::set<std::string> out;
  for (const auto& rule : role["rules"]) {
    for (const auto& resource : rule["resources"]) {
      std::string verbs;
      for (const auto& v : rule["verbs"]) verbs += (verbs.empty() ? "" : ",") + v.as<std::string>();
      std::string names;
      for (const auto& n : rule["resourceNames"]) names += "[" + n.as<std::string>() + "]";
      out.insert(rule["apiGroups"][0].as<std::string>() + "/" + resource.as<std::string>() + names +
                 ": " + verbs);
    }
  }
  return out;
}

const std::set<std::string> kPipelineRules = {
    "pipescale.io/inferencepipelines: list,watch",
    "pipescale.io/inferencepipelines/status: patch",
    "apps/deployments: get,list,watch,create,patch,delete",
    "/configmaps: list,watch,create,patch",
    "/events: create",
    "/serviceaccounts: list,watch,create",
    "/services: list,watch,create",
    "rbac.authorization.k8s.io/rolebindings: list,watch,create",
    "policy/poddisruptionbudgets: list,watch,create",
};
// Cluster-scoped, so a ClusterRole whatever the namespaces watched: nodes, every pod, and the
// PriorityClasses a pipeline's priority is read from.
const std::set<std::string> kCapacityRules = {"/nodes: list,watch", "/pods: list,watch",
                                              "scheduling.k8s.io/priorityclasses: list,watch"};

std::vector<std::string> Args(const YAML::Node& deployment) {
  std::vector<std::string> out;
  for (const auto& a : deployment["spec"]["template"]["spec"]["containers"][0]["args"]) {
    out.push_back(a.as<std::string>());
  }
  return out;
}

// A node as text with map keys sorted, so two documents compare equal whatever their key order.
std::string Canonical(const YAML::Node& node) {
  if (node.IsMap()) {
    std::map<std::string, std::string> entries;
    for (const auto& e : node) entries[e.first.as<std::string>()] = Canonical(e.second);
    std::string out = "{";
    for (const auto& [k, v] : entries) out += k + ": " + v + ", ";
    return out + "}";
  }
  if (node.IsSequence()) {
    std::string out = "[";
    for (const auto& e : node) out += Canonical(e) + ", ";
    return out + "]";
  }
  return node.IsScalar() ? "'" + node.as<std::string>() + "'" : "~";
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(Chart, LintsStrict) {
  const ShellResult lint = RunShell(Helm() + " lint --strict " + kRoot + "/helm/pipescale");
  EXPECT_EQ(lint.code, 0) << lint.out;
}

TEST(Chart, DefaultsGrantClusterWideRightsAndTheLeaseInTheReleaseNamespace) {
  const Rendered r = Template("");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> expected = kPipelineRules;
  expected.insert(kCapacityRules.begin(), kCapacityRules.end());
  EXPECT_EQ(Rules(r.Get("ClusterRole", "rel-pipescale")), expected);
  EXPECT_EQ(r.Count("Role"), 1);
  const YAML::Node lease = r.Get("Role", "rel-pipescale-leader-election");
  EXPECT_EQ(lease["metadata"]["namespace"].as<std::string>(), "ops");
  EXPECT_EQ(Rules(lease),
            (std::set<std::string>{"coordination.k8s.io/leases: create",
                                   "coordination.k8s.io/leases[pipescale-operator]: get,update"}));
  const YAML::Node binding = r.Get("ClusterRoleBinding", "rel-pipescale");
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), "rel-pipescale");
  EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(), "ops");
}

TEST(Chart, WatchNamespacesGrantPipelineRightsOnlyThere) {
  const Rendered r = Template("--set 'watchNamespaces={team-a,team-b}'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Nodes are cluster-scoped: the capacity model's rights stay a ClusterRole.
  EXPECT_EQ(Rules(r.Get("ClusterRole", "rel-pipescale")), kCapacityRules);
  int roles = 0;
  for (const auto& o : r.objects) {
    if (o["kind"].as<std::string>() != "Role" ||
        o["metadata"]["name"].as<std::string>() != "rel-pipescale") {
      continue;
    }
    ++roles;
    EXPECT_EQ(Rules(o), kPipelineRules);
    EXPECT_TRUE(o["metadata"]["namespace"].as<std::string>().starts_with("team-"));
  }
  EXPECT_EQ(roles, 2);
  EXPECT_EQ(r.Count("RoleBinding"), 3);  // two namespaces and the Lease
  EXPECT_TRUE(Has(Args(r.Get("Deployment")), "--namespace=team-a,team-b"));
}

// Each pipeline's router reads its pods and its routing ConfigMap through informers, nothing
// else; the operator binds routers to this ClusterRole by the name it is given.
TEST(Chart, RoutersGetOnlyWhatTheyRead) {
  const Rendered r = Template("");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Rules(r.Get("ClusterRole", "rel-pipescale-router")),
            (std::set<std::string>{"/pods: list,watch", "/configmaps: list,watch"}));
  EXPECT_TRUE(Has(Args(r.Get("Deployment")), "--router-cluster-role=rel-pipescale-router"));
}

TEST(Chart, TheOperatorRunsLockedDown) {
  const Rendered r = Template("");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const YAML::Node pod = r.Get("Deployment")["spec"]["template"]["spec"];
  const YAML::Node c = pod["containers"][0];
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
  EXPECT_GT(pod["securityContext"]["runAsUser"].as<int>(), 0);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
  EXPECT_TRUE(c["securityContext"]["readOnlyRootFilesystem"].as<bool>());
  EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>());
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"][0].as<std::string>(), "ALL");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_TRUE(c["resources"]["requests"]["memory"]);
  const auto args = Args(r.Get("Deployment"));
  EXPECT_TRUE(Has(args, "--leader-elect=true"));
  EXPECT_TRUE(Has(args, "--leader-election-namespace=ops"));
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "rel-pipescale");
  EXPECT_EQ(r.Count("PodDisruptionBudget"), 0);  // one replica: a PDB would block every drain
}

TEST(Chart, TwoReplicasGetADisruptionBudget) {
  const Rendered r = Template("--set replicas=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.Get("Deployment")["spec"]["replicas"].as<int>(), 2);
  EXPECT_EQ(r.Get("PodDisruptionBudget")["spec"]["minAvailable"].as<int>(), 1);
}

TEST(Chart, PrometheusOperatorObjectsOnlyWhereTheirApiExists) {
  const Rendered without = Template("");
  ASSERT_EQ(without.exit_code, 0) << without.output;
  EXPECT_EQ(without.Count("ServiceMonitor"), 0);
  EXPECT_EQ(without.Count("PrometheusRule"), 0);
  const Rendered with = Template(
      "--api-versions monitoring.coreos.com/v1 "
      "--set prometheus.serviceMonitor.additionalLabels.release=kps");
  ASSERT_EQ(with.exit_code, 0) << with.output;
  const YAML::Node monitor = with.Get("ServiceMonitor");
  EXPECT_EQ(monitor["metadata"]["labels"]["release"].as<std::string>(), "kps");
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["port"].as<std::string>(), "metrics");
  EXPECT_EQ(without.Count("PodMonitor"), 0);
  // Routers are scraped wherever their pipelines live, keeping their own namespace label.
  const YAML::Node routers = with.Get("PodMonitor", "rel-pipescale-routers");
  EXPECT_TRUE(routers["spec"]["namespaceSelector"]["any"].as<bool>());
  EXPECT_EQ(
      routers["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"].as<std::string>(),
      "router");
  EXPECT_TRUE(routers["spec"]["podMetricsEndpoints"][0]["honorLabels"].as<bool>());
  // Model pods too, wherever they run: the selector matches the labels the operator gives them,
  // and their pipescale.io labels become the series' labels as the local cluster's Prometheus
  // maps them (hack/local-env.sh), which the default queries are tested against.
  const YAML::Node models = with.Get("PodMonitor", "rel-pipescale-models");
  EXPECT_TRUE(models["spec"]["namespaceSelector"]["any"].as<bool>());
  model::Pipeline pipeline;
  pipeline.name = "p";
  const nlohmann::json labels =
      api::DeploymentLabels(pipeline, model::Task{.name = "t"}, model::Variant{.name = "v"}, "c");
  for (const auto& match : models["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(labels.value(match.first.as<std::string>(), ""), match.second.as<std::string>())
        << match.first.as<std::string>();
  }
  const YAML::Node endpoint = models["spec"]["podMetricsEndpoints"][0];
  EXPECT_EQ(endpoint["port"].as<std::string>(), "http");
  std::ifstream box(kRoot + "/hack/local-env.sh");
  const std::string box_text((std::istreambuf_iterator<char>(box)), {});
  const std::string labelmap = endpoint["relabelings"][0]["regex"].as<std::string>();
  EXPECT_EQ(endpoint["relabelings"][0]["action"].as<std::string>(), "labelmap");
  EXPECT_NE(box_text.find("{regex: " + labelmap + ", action: labelmap}"), std::string::npos)
      << labelmap;
  // The rule's groups are the alerts file, untouched by Helm's templating.
  const YAML::Node alerts = YAML::LoadFile(kRoot + "/helm/pipescale/files/alerts.yaml");
  const YAML::Node groups = with.Get("PrometheusRule")["spec"]["groups"];
  EXPECT_EQ(Canonical(groups), Canonical(alerts["groups"]));
}

TEST(Chart, DashboardsAreConfigMapsForTheGrafanaSidecar) {
  const Rendered r = Template("--set grafana.dashboards.annotations.grafana_folder=pipescale");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int dashboards = 0;
  for (const auto& o : r.objects) {
    if (o["kind"].as<std::string>() != "ConfigMap") continue;
    ++dashboards;
    EXPECT_EQ(o["metadata"]["labels"]["grafana_dashboard"].as<std::string>(), "1");
    EXPECT_EQ(o["metadata"]["annotations"]["grafana_folder"].as<std::string>(), "pipescale");
    for (const auto& d : o["data"]) {
      std::ifstream file(kRoot + "/helm/pipescale/files/dashboards/" + d.first.as<std::string>());
      std::stringstream text;
      text << file.rdbuf();
      std::string expected = text.str();
      while (!expected.empty() && expected.back() == '\n') expected.pop_back();
      EXPECT_EQ(d.second.as<std::string>(), expected) << d.first.as<std::string>();
    }
  }
  EXPECT_EQ(dashboards, 2);
  EXPECT_EQ(Template("--set grafana.dashboards.enabled=false").Count("ConfigMap"), 0);
}

TEST(Chart, TheCrdIsKeptOnUninstall) {
  const Rendered r = Template("");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const YAML::Node crd = r.Get("CustomResourceDefinition");
  EXPECT_EQ(crd["metadata"]["annotations"]["helm.sh/resource-policy"].as<std::string>(), "keep");
  // fromYaml/toYaml must keep the condition enum's strings strings.
  const YAML::Node status =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
         ["conditions"]["items"]["properties"]["status"];
  EXPECT_EQ(status["enum"][0].Tag(), "!");
  EXPECT_EQ(Template("--set crd.enabled=false").Count("CustomResourceDefinition"), 0);
}

// A wrong value fails at install time, naming it.
TEST(Chart, WrongValuesFailNamingTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--set logFormat=xml", "logFormat"},
      {"--set replicas=0", "replicas"},
      {"--set 'watchNamespaces={Team_A}'", "watchNamespaces"},
      {"--set metrics.port=70000", "metrics.port"},
      {"--set prometheus.url=prometheus:9090", "prometheus.url"},
      {"--set leaderElection.enable=false", "enable"},
      {"--set imagee.tag=x", "imagee"},
  };
  for (const auto& [args, field] : cases) {
    const Rendered r = Template(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.output.find(field), std::string::npos) << args << ":\n" << r.output;
  }
}

}  // namespace
