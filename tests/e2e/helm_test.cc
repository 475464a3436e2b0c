// The Helm chart on the local cluster, as a platform team would use it: `helm install` runs the
// operator as a Pod (the node agent maps the image pipescale/operator to the built binary) with
// the chart's ServiceAccount token and in-cluster config only; it wins its Lease, plans
// pipelines end to end, is confined by watchNamespaces, rolls on `helm upgrade` and leaves the
// users' pipelines on `helm uninstall`. Every rule the chart grants is shown to be needed, every
// dashboard query returns data, and the rendered chart and deploy/ pass the apiserver's
// dry run. Each install's operator watches only the namespaces of its own test (watchNamespaces,
// or --namespace where the test keeps the chart's cluster-wide rights), so these tests run beside
// others without reconciling their pipelines.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "integration/harness/cluster_test.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "reconciler/reconciler.h"
#include "support/shell.h"
#include "support/text.h"

namespace pipescale {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::LocalEnv;
using testing::Process;
using testing::ReplaceAll;
using namespace std::chrono_literals;

const std::string kRoot = PIPESCALE_SOURCE_DIR;

using Shell = testing::ShellResult;
Shell Sh(const std::string& command) { return testing::RunShell(command); }

// Two tasks on CPU, planned by OPTIMIZER, rates read over 5 s windows so a test sees them soon.
constexpr const char* kPipeline = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: NAME, namespace: NAMESPACE}
spec:
  optimizer: OPTIMIZER
  interval: 2s
  router: {}
  hardwareClasses: [{name: cpu, costPerHour: 0.1, maxReplicas: 4}]
  tasks:
    - name: detect
      next: [{task: classify}]
      variants:
        - {name: small, accuracy: 0.8, batchSize: {max: 8}, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {a: 0, b: 8, c: 20}}}]}
        - {name: large, accuracy: 0.95, batchSize: {max: 8}, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {a: 0, b: 12, c: 30}}}]}
    - name: classify
      variants:
        - {name: tiny, batchSize: {max: 8}, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {a: 0, b: 5, c: 15}}}]}
  paths: [{name: p, tasks: [detect, classify], sloMs: 400}]
  forecast: FORECAST
  metrics:
    pathRate: 'sum(rate(pipescale_requests_total{namespace="{{namespace}}",pipeline="{{pipeline}}",path="{{path}}"}[5s]))'
)";

class HelmChartTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (IsSkipped()) return;
    const Shell tools = Sh(kRoot + "/hack/install-tools.sh 2>/dev/null");
    ASSERT_EQ(tools.code, 0) << tools.out;
    dir_ = ::testing::TempDir() + "/helm-" + ns_;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/home");
    helm_ = "HOME=" + dir_ + "/home KUBECONFIG=" + env().Var("KUBECONFIG") + " " +
            tools.out.substr(0, tools.out.find('\n')) + "/bin/helm";
    release_ = ns_.substr(0, 40);
  }

  void TearDown() override {
    if (!helm_.empty()) (void)Sh(helm_ + " uninstall " + release_ + " -n " + ns_);
    // No operator watches them any more; their pods end their grace periods while tests go on.
    for (const std::string& ns : namespaces_) (void)client_->Delete("/api/v1/namespaces/" + ns);
  }

  static const LocalEnv& env() { return LocalEnv::Get(); }
  std::string Kubectl(const std::string& args) const {
    return "kubectl --kubeconfig " + env().Var("KUBECONFIG") + " " + args;
  }

  // The chart as a user installs it here: the CRD is the cluster's already (local-env applies
  // crds/); pods share one network namespace, so the operator listens on its pod's address.
  Shell Helm(const std::string& verb, const std::string& values = "") const {
    return Sh(helm_ + " " + verb + " " + release_ + " " + kRoot + "/helm/pipescale -n " + ns_ +
              " --set crd.enabled=false --set 'listenAddress=$(POD_IP)' --set image.tag=dev" +
              " --set prometheus.url=" + env().Var("PIPESCALE_PROMETHEUS") + " " + values +
              " --wait --timeout 120s");
  }

  std::string NewNamespace(const std::string& suffix) {
    const std::string name = ns_.substr(0, 40) + "-" + suffix;
    (void)client_->Delete("/api/v1/namespaces/" + name);
    EXPECT_TRUE(Eventually(
        [&] {
          return client_
              ->Create(
                  "/api/v1/namespaces",
                  {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}})
              .ok();
        },
        120s, 500ms))
        << name;  // one left by an earlier run ends its pods' grace periods first
    namespaces_.push_back(name);
    return name;
  }

  void ApplyPipeline(const std::string& ns, const std::string& name, const std::string& optimizer,
                     const std::string& forecast = "{method: none}") {
    const std::string file = dir_ + "/" + ns + "-" + name + ".yaml";
    std::ofstream(file) << ReplaceAll(
        ReplaceAll(ReplaceAll(ReplaceAll(kPipeline, "NAMESPACE", ns), "NAME", name), "OPTIMIZER",
                   optimizer),
        "FORECAST", forecast);
    const Shell applied = Sh(Kubectl("apply -f " + file));
    ASSERT_EQ(applied.code, 0) << applied.out;
  }

  std::unique_ptr<Process> Load(const std::string& ns, const std::string& name, double rps,
                                int seconds) const {
    const std::string file = dir_ + "/" + ns + "-" + name + ".yaml";
    return std::make_unique<Process>(
        std::vector<std::string>{PIPESCALE_LOADGEN, "-f", file, "--kubeconfig",
                                 env().Var("KUBECONFIG"), "--trace",
                                 std::to_string(rps) + ":" + std::to_string(seconds)},
        dir_ + "/loadgen-" + name + ".log");
  }

  json Status(const std::string& ns, const std::string& name) const {
    auto o = client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, ns, name));
    return o.ok() ? o->value("status", json::object()) : json::object();
  }

  // Planned and applied: Ready=True, and every Deployment of the plan has its replicas Ready.
  bool Running(const std::string& ns, const std::string& name) const {
    const json s = Status(ns, name);
    if (!s.contains("plan")) return false;
    for (const auto& t : s["plan"]["tasks"]) {
      auto d = client_->Get(kube::ObjectPath(kube::kDeployments, ns, t["deployment"]));
      if (!d.ok() || (*d)["status"].value("readyReplicas", 0) != t["replicas"].get<int>()) {
        return false;
      }
    }
    return true;
  }

  // The chart's operator pods that are not being deleted.
  std::vector<json> OperatorPods() const {
    auto pods = client_->Get("/api/v1/namespaces/" + ns_ + "/pods?labelSelector=" +
                             kube::QueryEscape("app.kubernetes.io/instance=" + release_));
    std::vector<json> out;
    if (!pods.ok()) return out;
    for (const json& p : (*pods)["items"]) {
      if (!p["metadata"].contains("deletionTimestamp")) out.push_back(p);
    }
    return out;
  }

  static bool Ready(const json& pod) {
    for (const json& c : pod["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
    }
    return false;
  }

  // What the node agent keeps of a container's output (it serves no `kubectl logs`).
  std::string PodLog(const std::string& pod) const {
    std::ifstream file(env().Var("PIPESCALE_DIR") + "/pods/" + ns_ + "_" + pod + "/operator.log");
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

  std::string LeaseHolder() const {
    auto lease = client_->Get(kube::ObjectPath(kube::kLeases, ns_, "pipescale-operator"));
    return lease.ok() ? (*lease)["spec"].value("holderIdentity", "") : "";
  }

  std::string dir_, helm_, release_;
  std::vector<std::string> namespaces_;  // made by NewNamespace, deleted at the end
};

// The one Ready operator pod that holds the Lease, or "".
std::string LeadingPod(const HelmChartTest& t, const std::vector<json>& pods,
                       const std::string& holder) {
  for (const json& p : pods) {
    const std::string name = p["metadata"]["name"];
    // The identity is hostname_pid, and a pod's hostname is its name.
    if (holder.starts_with(name + "_") && p["status"].value("phase", "") == "Running") return name;
  }
  (void)t;
  return "";
}

TEST_F(HelmChartTest, InstallsTheOperatorAsAPodThatPlansUpgradesAndUninstalls) {
  // The chart installs the CRD too: it takes over the one the local cluster applied (Helm adopts
  // an object annotated with its release), so that uninstall shows the CRD is kept.
  const std::string crd = "customresourcedefinition inferencepipelines.pipescale.io";
  ASSERT_EQ(Sh(Kubectl("annotate --overwrite " + crd + " meta.helm.sh/release-name=" + release_ +
                       " meta.helm.sh/release-namespace=" + ns_))
                .code,
            0);
  ASSERT_EQ(Sh(Kubectl("label --overwrite " + crd + " app.kubernetes.io/managed-by=Helm")).code, 0);
  // The default install's rights (a ClusterRole), its operator told to watch only this test's
  // namespace, as others run beside it.
  const std::string apps = NewNamespace("apps");
  const std::string values = "--set crd.enabled=true --set 'extraArgs={--namespace=" + apps + "}'";
  const Shell installed = Helm("install", values);
  ASSERT_EQ(installed.code, 0) << installed.out;
  EXPECT_NE(installed.out.find("kubectl apply -f deploy/examples/"), std::string::npos)
      << "NOTES.txt tells what to do next:\n"
      << installed.out;

  std::string leader;
  ASSERT_TRUE(Eventually(
      [&] {
        leader = LeadingPod(*this, OperatorPods(), LeaseHolder());
        return !leader.empty();
      },
      60s))
      << LeaseHolder();

  // The FA2 paper's CPU example, in another namespace, planned and running under load.
  std::ifstream example(kRoot + "/deploy/examples/fa2-cpu.yaml");
  std::stringstream text;
  text << example.rdbuf();
  const std::string file = dir_ + "/" + apps + "-fa2-app-cpu.yaml";
  std::ofstream(file) << ReplaceAll(text.str(), "namespace: default", "namespace: " + apps);
  ASSERT_EQ(Sh(Kubectl("apply -f " + file)).code, 0);
  auto load = Load(apps, "fa2-app-cpu", 2, 120);
  EXPECT_TRUE(Eventually([&] { return Running(apps, "fa2-app-cpu"); }, 90s, 500ms))
      << Status(apps, "fa2-app-cpu").dump() << PodLog(leader);
  for (const json& c : Status(apps, "fa2-app-cpu")["conditions"]) {
    if (c["type"] == "Ready") {
      EXPECT_EQ(c["status"], "True") << c.dump();
    }
  }
  EXPECT_EQ(PodLog(leader).find("\"level\":\"error\""), std::string::npos) << PodLog(leader);

  // helm upgrade with a changed value rolls the operator; the new pod takes the Lease.
  const Shell upgraded = Helm("upgrade", values + " --set workers=3");
  ASSERT_EQ(upgraded.code, 0) << upgraded.out;
  std::string successor;
  ASSERT_TRUE(Eventually(
      [&] {
        const auto pods = OperatorPods();
        successor = LeadingPod(*this, pods, LeaseHolder());
        return pods.size() == 1 && !successor.empty() && successor != leader &&
               pods[0]["spec"]["containers"][0]["args"].dump().find("--workers=3") !=
                   std::string::npos;
      },
      90s))
      << LeaseHolder();
  EXPECT_NE(PodLog(leader).find("shutting down"), std::string::npos) << PodLog(leader);

  // The pipeline keeps being reconciled by the new pod.
  const long generation = Status(apps, "fa2-app-cpu").value("observedGeneration", 0L);
  ASSERT_EQ(Sh(Kubectl("-n " + apps + " patch ipl fa2-app-cpu --type merge -p " +
                       "'{\"spec\":{\"interval\":\"5s\"}}'"))
                .code,
            0);
  EXPECT_TRUE(Eventually(
      [&] { return Status(apps, "fa2-app-cpu").value("observedGeneration", 0L) > generation; },
      30s))
      << PodLog(successor);

  // helm uninstall takes the operator and its rights, and leaves the users' pipelines.
  const Shell uninstalled = Sh(helm_ + " uninstall " + release_ + " -n " + ns_);
  ASSERT_EQ(uninstalled.code, 0) << uninstalled.out;
  EXPECT_FALSE(
      client_->Get("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + release_ + "-pipescale")
          .ok());
  EXPECT_TRUE(Eventually([&] { return OperatorPods().empty(); }, 30s));
  EXPECT_TRUE(
      client_->Get(kube::ObjectPath(reconciler::kInferencePipelines, apps, "fa2-app-cpu")).ok());
  for (const auto& t : Status(apps, "fa2-app-cpu")["plan"]["tasks"]) {
    EXPECT_TRUE(client_->Get(kube::ObjectPath(kube::kDeployments, apps, t["deployment"])).ok());
  }
  const auto kept = client_->Get(
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/inferencepipelines.pipescale.io");
  ASSERT_TRUE(kept.ok()) << "helm uninstall deleted the CRD, and with it every pipeline";
  EXPECT_EQ((*kept)["metadata"]["annotations"].value("helm.sh/resource-policy", ""), "keep");
  load->Stop(SIGTERM, 10s);
}

// Told to watch a namespace its RBAC does not cover (the chart grants watchNamespaces only),
// the operator works where it may, logs the apiserver's 403 for the rest once, and neither
// crashes nor turns unready.
TEST_F(HelmChartTest, WatchNamespacesConfineTheOperator) {
  const std::string granted = NewNamespace("granted");
  const std::string other = NewNamespace("other");
  ApplyPipeline(granted, "chain", "fa2");
  ApplyPipeline(other, "chain", "fa2");
  const Shell installed =
      Helm("install", "--set 'watchNamespaces={" + granted +
                          "}' --set 'extraArgs={--namespace=" + granted + "\\," + other + "}'");
  ASSERT_EQ(installed.code, 0) << installed.out;
  const std::string sa = "system:serviceaccount:" + ns_ + ":" + release_ + "-pipescale";
  EXPECT_EQ(Sh(Kubectl("auth can-i patch deployments -n " + granted + " --as " + sa)).code, 0);
  EXPECT_NE(Sh(Kubectl("auth can-i list deployments -n " + other + " --as " + sa)).code, 0);

  std::string pod;
  ASSERT_TRUE(Eventually(
      [&] {
        pod = LeadingPod(*this, OperatorPods(), LeaseHolder());
        return !pod.empty();
      },
      60s));
  EXPECT_TRUE(Eventually([&] { return Status(granted, "chain").contains("conditions"); }, 30s))
      << PodLog(pod);
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string log = PodLog(pod);
        return log.find("cannot list") != std::string::npos &&
               log.find("forbidden") != std::string::npos && log.find(other) != std::string::npos;
      },
      30s))
      << PodLog(pod);
  // Time passing is the subject here: what must not happen has no event to wait for. In 5 s each
  // watch of `other` retries four times or more (its backoff starts at 200 ms and doubles), and
  // each retry would log again were the 403 not reported once; a crash or a failed probe would
  // show as well.
  std::this_thread::sleep_for(5s);
  const auto pods = OperatorPods();
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_TRUE(Ready(pods[0]));
  EXPECT_EQ(pods[0]["status"]["containerStatuses"][0].value("restartCount", -1), 0);
  EXPECT_FALSE(Status(other, "chain").contains("conditions"));
  // The forbidden namespace is reported once, not at every retry.
  const std::string log = PodLog(pod);
  size_t reports = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    reports +=
        line.find("cannot list") != std::string::npos && line.find(other) != std::string::npos;
  }
  // Each watch of the namespace: pipelines, Deployments, and the six kinds of object the
  // operator creates beside them (routing ConfigMaps; routers' accounts, bindings, Deployments,
  // Services and PodDisruptionBudgets).
  EXPECT_EQ(reports, 8u) << log;
}

// A pipeline the operator refuses (a path through a task that does not exist): it says so in
// an Event, which needs no metrics and no plan.
constexpr const char* kInvalidPipeline = R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: NAME, namespace: NAMESPACE}
spec:
  hardwareClasses: [{name: cpu}]
  tasks: [{name: a, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: {c: 5}}}]}]}]
  paths: [{name: p, tasks: [a, missing], sloMs: 100}]
)";

// Each rule the chart grants, taken away in turn, stops the part of the operator's job that
// needs it, and the operator says which in the apiserver's words. The operator runs as a local
// process with the chart's ServiceAccount token (faster to restart than a pod, the same rights).
TEST_F(HelmChartTest, EveryRuleTheChartGrantsIsNeeded) {
  // Its pod, until scaled to 0, watches only the release's namespace, which holds no pipeline.
  ASSERT_EQ(Helm("install", "--set 'extraArgs={--namespace=" + ns_ + "}'").code, 0);
  ASSERT_EQ(
      Sh(Kubectl("-n " + ns_ + " scale deployment " + release_ + "-pipescale --replicas=0")).code,
      0);
  ASSERT_TRUE(Eventually([&] { return OperatorPods().empty(); }, 60s));

  const std::string sa = release_ + "-pipescale";
  auto token = client_->Create("/api/v1/namespaces/" + ns_ + "/serviceaccounts/" + sa + "/token",
                               {{"apiVersion", "authentication.k8s.io/v1"},
                                {"kind", "TokenRequest"},
                                {"spec", json::object()}});
  ASSERT_TRUE(token.ok()) << token.error().message;
  const std::string kubeconfig = dir_ + "/operator.kubeconfig";
  std::ofstream(kubeconfig)
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
      << env().Var("PIPESCALE_APISERVER")
      << ", certificate-authority: " << env().Var("PIPESCALE_CA")
      << "}\nusers:\n- name: u\n  user: {token: " << (*token)["status"]["token"].get<std::string>()
      << "}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
      << "current-context: x\n";
  const std::string apps = NewNamespace("apps");
  const std::string cluster_role = "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + sa;
  const std::string lease_role =
      "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns_ + "/roles/" + sa + "-leader-election";

  struct Case {
    std::string role;       // the ClusterRole or the Lease's Role
    std::string resources;  // the rule's resources, as the role lists them
    bool named;             // the rule with resourceNames
    std::string symptom;    // what the operator logs
    bool invalid_pipeline = false;
  };
  const std::vector<Case> cases = {
      {cluster_role, "[\"inferencepipelines\"]", false,
       "cannot list resource \\\"inferencepipelines\\\""},
      {cluster_role, "[\"inferencepipelines/status\"]", false,
       "cannot patch resource \\\"inferencepipelines/status\\\""},
      {cluster_role, "[\"deployments\"]", false, "cannot list resource \\\"deployments\\\""},
      {cluster_role, "[\"configmaps\"]", false, "cannot list resource \\\"configmaps\\\""},
      {cluster_role, "[\"events\"]", false, "cannot create resource \\\"events\\\"", true},
      {cluster_role, "[\"nodes\",\"pods\"]", false, "cannot list resource \\\"nodes\\\""},
      {cluster_role, "[\"serviceaccounts\",\"services\"]", false,
       "cannot list resource \\\"serviceaccounts\\\""},
      {cluster_role, "[\"rolebindings\"]", false, "cannot list resource \\\"rolebindings\\\""},
      {cluster_role, "[\"poddisruptionbudgets\"]", false,
       "cannot list resource \\\"poddisruptionbudgets\\\""},
      {lease_role, "[\"leases\"]", false, "cannot create resource \\\"leases\\\""},
      {lease_role, "[\"leases\"]", true, "cannot get resource \\\"leases\\\""},
  };

  // Runs the operator on pipeline `name` until `done` holds of its log; returns the log.
  int run = 0;
  auto operate = [&](const std::string& name, bool invalid, auto done) {
    const std::string file = dir_ + "/" + name + ".yaml";
    std::string text = ReplaceAll(
        ReplaceAll(invalid ? kInvalidPipeline : kPipeline, "NAMESPACE", apps), "NAME", name);
    // Only the valid pipeline names an optimizer and a forecast.
    if (!invalid)
      text = ReplaceAll(ReplaceAll(text, "OPTIMIZER", "loki"), "FORECAST", "{method: none}");
    std::ofstream(file) << text;
    EXPECT_EQ(Sh(Kubectl("apply -f " + file)).code, 0);
    Process op({PIPESCALE_OPERATOR, "--kubeconfig", kubeconfig, "--namespace", apps,
                "--leader-elect", "--leader-election-namespace", ns_, "--metrics-bind-address",
                "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", "--prometheus-url",
                env().Var("PIPESCALE_PROMETHEUS"), "--log-format", "json", "--router-cluster-role",
                sa + "-router"},
               dir_ + "/operator-" + std::to_string(++run) + ".log");
    const bool ok = Eventually([&] { return done(op.Log()); }, 30s, 100ms);
    EXPECT_EQ(op.Stop(SIGTERM, 10s), 0) << op.Log();
    EXPECT_EQ(Sh(Kubectl("-n " + apps + " delete ipl " + name + " --wait=false")).code, 0);
    return std::make_pair(ok, op.Log());
  };

  // With every rule: the operator leads, reports the pipeline's status and the invalid one's
  // Event, and is refused nothing.
  auto [planned, log] = operate("all-rules", false, [&](const std::string&) {
    return Status(apps, "all-rules").contains("conditions");
  });
  EXPECT_TRUE(planned) << log;
  auto [warned, invalid_log] = operate("all-rules-invalid", true, [&](const std::string&) {
    auto events = client_->Get("/api/v1/namespaces/" + apps + "/events?fieldSelector=" +
                               kube::QueryEscape("involvedObject.name=all-rules-invalid"));
    return events.ok() && !(*events)["items"].empty();
  });
  EXPECT_TRUE(warned) << invalid_log;
  EXPECT_EQ((log + invalid_log).find("forbidden"), std::string::npos) << log << invalid_log;

  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const auto original = client_->Get(c.role);
    ASSERT_TRUE(original.ok());
    json role = *original;
    json kept = json::array();
    for (const json& rule : role["rules"]) {
      const bool match =
          rule["resources"].dump() == c.resources && rule.contains("resourceNames") == c.named;
      if (!match) kept.push_back(rule);
    }
    ASSERT_EQ(kept.size() + 1, role["rules"].size()) << c.resources;
    role["rules"] = kept;
    ASSERT_TRUE(client_->Update(c.role, role).ok());
    // The Lease exists after the runs before; without the right to create it, it must not.
    if (c.symptom.find("create resource \\\"leases") != std::string::npos) {
      (void)client_->Delete(kube::ObjectPath(kube::kLeases, ns_, "pipescale-operator"));
    }
    auto [seen, without] =
        operate("rule-" + std::to_string(i), c.invalid_pipeline,
                [&](const std::string& l) { return l.find(c.symptom) != std::string::npos; });
    EXPECT_TRUE(seen) << "without " << c.resources << " the operator should log " << c.symptom
                      << ":\n"
                      << without;
    auto current = client_->Get(c.role);
    ASSERT_TRUE(current.ok());
    (*current)["rules"] = (*original)["rules"];
    ASSERT_TRUE(client_->Update(c.role, *current).ok());
  }
}

// The rendered chart (both RBAC modes) and deploy/ pass the real apiserver's validation, and
// `kubectl explain` teaches the API from the CRD's descriptions.
TEST_F(HelmChartTest, TheChartAndDeployPassTheApiserversDryRun) {
  const std::string render =
      helm_ + " template " + release_ + " " + kRoot + "/helm/pipescale -n " + ns_;
  for (const std::string& values :
       std::vector<std::string>{"", " --set 'watchNamespaces={" + ns_ + "}' --set replicas=2"}) {
    const Shell dry = Sh(render + values + " | " + Kubectl("apply --dry-run=server -f -"));
    EXPECT_EQ(dry.code, 0) << values << ":\n" << dry.out;
    EXPECT_NE(dry.out.find("deployment.apps/" + release_ + "-pipescale created (server dry run)"),
              std::string::npos)
        << dry.out;
  }
  (void)client_->Create(
      "/api/v1/namespaces",
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "pipescale-system"}}}});
  const Shell deploy = Sh(Kubectl("apply --dry-run=server -k " + kRoot + "/deploy"));
  EXPECT_EQ(deploy.code, 0) << deploy.out;
  EXPECT_NE(deploy.out.find("clusterrole.rbac.authorization.k8s.io/pipescale"), std::string::npos)
      << deploy.out;

  for (const char* field : {"ipl", "ipl.spec", "ipl.spec.tasks.variants.profiles.latencyMs",
                            "ipl.status", "ipl.status.plan.tasks", "ipl.status.conditions"}) {
    Shell explained;
    EXPECT_TRUE(Eventually(
        [&] {
          explained = Sh(Kubectl(std::string("explain ") + field));
          return explained.code == 0;
        },
        20s, 500ms))
        << explained.out;
    EXPECT_EQ(explained.out.find("<empty>"), std::string::npos) << field << ":\n" << explained.out;
  }
}

// Every panel of the shipped dashboards returns data from the local Prometheus while the
// chart's operator (scraped as a pod) plans three pipelines under load, one per optimizer
// family whose panels differ (accuracy: Loki; the forecast: MArk).
TEST_F(HelmChartTest, EveryDashboardPanelReturnsData) {
  const std::string apps = NewNamespace("apps");
  ASSERT_EQ(Helm("install", "--set 'watchNamespaces={" + apps + "}'").code, 0);
  const std::vector<std::pair<std::string, std::string>> pipelines = {
      {"chain", "fa2"}, {"tiers", "loki"}, {"ahead", "mark"}};
  std::vector<std::unique_ptr<Process>> loads;
  for (const auto& [name, optimizer] : pipelines) {
    ApplyPipeline(apps, name, optimizer,
                  optimizer == "mark" ? "{method: linear, horizon: 20s}" : "{method: none}");
    loads.push_back(Load(apps, name, 15, 120));
  }
  for (const auto& [name, optimizer] : pipelines) {
    EXPECT_TRUE(Eventually([&] { return Running(apps, name); }, 60s, 500ms))
        << name << ": " << Status(apps, name).dump();
  }
  // A hand edit the operator sets back, so the operator view's "set back" panel has a series.
  // The class allows 4 replicas, so no plan wants 6: a count a plan could choose (3 under the
  // tail model at 15/s) is taken for the operator's own and not counted as set back. Only a
  // Deployment of the plan is set back (one the plan leaves goes to 0 as a leftover), and the
  // plan may move to another variant under the rising load: the edit is made again, on the
  // plan of the moment, until the panel has its series.
  auto edit = [&] {
    const json tasks = Status(apps, "chain")["plan"].value("tasks", json::array());
    if (tasks.empty()) return;
    const std::string scaled = tasks[0].value("deployment", "");
    EXPECT_EQ(Sh(Kubectl("-n " + apps + " scale deployment " + scaled + " --replicas=6")).code, 0);
  };
  edit();
  int checks = 0;
  const std::string set_back = "operator: Changes set back and rolling restarts";

  const std::string dashboards = kRoot + "/helm/pipescale/files/dashboards/";
  std::map<std::string, std::string> missing;  // panel -> its query with no data
  auto check = [&] {
    const bool unseen = std::any_of(missing.begin(), missing.end(),
                                    [&](const auto& m) { return m.first.starts_with(set_back); });
    if (++checks % 5 == 0 && unseen) edit();
    missing.clear();
    std::map<std::string, bool> answered;
    for (const auto& [name, optimizer] : pipelines) {
      const Shell listed = Sh("node " + kRoot + "/tests/monitoring/dashboard_queries.js list " +
                              apps + " " + name + " " + dashboards + "*.json");
      std::istringstream lines(listed.out);
      for (std::string line; std::getline(lines, line);) {
        const json q = json::parse(line, nullptr, false);
        if (q.is_discarded()) continue;
        const std::string panel =
            q["dashboard"].get<std::string>() + ": " + q["panel"].get<std::string>();
        // Annotations mark events (a plan change, a rollout) and are empty between them.
        if (q["panel"].get<std::string>().starts_with("annotation ")) continue;
        const Shell answer =
            Sh("curl -s -G " + env().Var("PIPESCALE_PROMETHEUS") +
               "/api/v1/query --data-urlencode 'query=" + q["expr"].get<std::string>() + "'");
        const json body = json::parse(answer.out, nullptr, false);
        const bool data = !body.is_discarded() && body.value("status", "") == "success" &&
                          !body["data"]["result"].empty();
        answered[panel] = answered[panel] || data;
        if (!answered[panel]) missing[panel] = q["expr"];
        if (answered[panel]) missing.erase(panel);
      }
    }
    return !answered.empty() && missing.empty();
  };
  EXPECT_TRUE(Eventually(check, 60s, 2s)) << [&] {
    std::string out;
    for (const auto& [panel, expr] : missing) out += panel + ": " + expr + "\n";
    return out + Sh(Kubectl("-n " + apps + " get deployments,events")).out;
  }();
  for (auto& load : loads) load->Stop(SIGTERM, 10s);
}

}  // namespace
}  // namespace pipescale
