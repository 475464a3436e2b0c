// Google Benchmark: one reconcile's decision with the metrics in hand (the spec's target is
// 5 ms), on the FA2 paper's 10-DNN application. Decide is the whole of a reconcile apart from
// the API and Prometheus round trips: the plan, the Deployment diff, the status. Reading the
// pipeline (validation, the status typed) happens once per version of it, when the informer
// decodes it: BM_Decode.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "api/document.h"
#include "api/pipeline_object.h"
#include "api/status_json.h"
#include "common/file.h"
#include "reconciler/decide.h"

namespace {

using namespace pipescale;
using nlohmann::json;

json Example(const char* file) {
  auto text = ReadFileText(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + file);
  auto doc = api::ParseDocument(text ? *text : "");
  if (!doc.ok()) {
    std::fprintf(stderr, "%s: %s\n", file, doc.error().message.c_str());
    std::exit(1);
  }
  json object = std::move(doc).value();
  object["metadata"]["uid"] = "bench-uid";
  object["metadata"]["generation"] = 1;
  return object;
}

// `rps` in total, spread evenly over the paths.
model::MetricsSnapshot Load(const json& object, double rps) {
  model::MetricsSnapshot m;
  const json& paths = object["spec"]["paths"];
  for (const auto& p : paths) m.path_rates_rps[p["name"]] = rps / paths.size();
  return m;
}

// What a reconcile observes: the object as the informer decoded it, its Deployments, the load.
struct Observation {
  api::PipelineObject object;
  reconciler::Observed observed;

  reconciler::Decision Decide() const { return reconciler::Decide(observed, object.parsed); }
};

Observation Observe(const json& object, reconciler::Deployments deployments,
                    model::MetricsSnapshot metrics, double now) {
  Observation o{.object = api::ReadPipelineObject(object), .observed = {}};
  o.observed.meta = o.object.meta;
  o.observed.status = o.object.status;
  o.observed.deployments = std::move(deployments);
  o.observed.metrics = std::move(metrics);
  o.observed.now = now;
  return o;
}

// The Deployments as the first decision creates them, so later decisions see a cluster that
// already runs the plan for `rps`.
reconciler::Deployments Running(const json& object, double rps) {
  reconciler::Deployments deployments;
  for (const auto& w : Observe(object, {}, Load(object, rps), 1000).Decide().writes) {
    deployments[w.name] = api::ReadDeployment(w.body);
  }
  return deployments;
}

const char* File(const benchmark::State& state) {
  return state.range(0) == 1 ? "fa2-gpu.yaml" : "fa2-cpu.yaml";
}

// The common case: the load has not moved, the plan is already applied, nothing to write.
void BM_DecideSteady(benchmark::State& state) {
  const json object = Example(File(state));
  const double rps = state.range(1);
  const Observation o = Observe(object, Running(object, rps), Load(object, rps), 2000);
  size_t writes = 0;
  for (auto _ : state) writes = o.Decide().writes.size();
  state.counters["writes"] = static_cast<double>(writes);
}

// The load doubled since the plan was applied: a new plan and the patches that reach it.
void BM_DecideLoadChange(benchmark::State& state) {
  const json object = Example(File(state));
  const double rps = state.range(1);
  const Observation o = Observe(object, Running(object, rps), Load(object, 2 * rps), 2000);
  size_t writes = 0;
  for (auto _ : state) writes = o.Decide().writes.size();
  state.counters["writes"] = static_cast<double>(writes);
}

// A new pipeline: every Deployment built from the templates.
void BM_DecideFirst(benchmark::State& state) {
  const json object = Example(File(state));
  const Observation o = Observe(object, {}, Load(object, state.range(1)), 1000);
  size_t writes = 0;
  for (auto _ : state) writes = o.Decide().writes.size();
  state.counters["writes"] = static_cast<double>(writes);
}

// A new version of the pipeline, as the informer decodes it: the spec parsed and validated, the
// status (as the steady case writes it) typed.
void BM_Decode(benchmark::State& state) {
  json object = Example(File(state));
  const double rps = state.range(1);
  object["status"] = api::StatusToJson(
      Observe(object, Running(object, rps), Load(object, rps), 2000).Decide().status);
  for (auto _ : state) benchmark::DoNotOptimize(api::ReadPipelineObject(object));
}

// Args: {0 = CPU profiles / 1 = GPU profiles, total RPS}, as in the FA2 benchmark.
void Args(benchmark::internal::Benchmark* b) {
  for (int gpu : {0, 1}) {
    for (int rps : {6, 27, 60}) b->Args({gpu, rps});
  }
  b->ArgNames({"gpu", "rps"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_DecideSteady)->Apply(Args);
BENCHMARK(BM_DecideLoadChange)->Apply(Args);
BENCHMARK(BM_DecideFirst)->Apply(Args);
BENCHMARK(BM_Decode)->Apply(Args);

}  // namespace

BENCHMARK_MAIN();
