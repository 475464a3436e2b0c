#include "optimizer/registry.h"

#include <array>

#include "common/check.h"
#include "optimizer/baselines.h"
#include "optimizer/exact.h"
#include "optimizer/fa2.h"
#include "optimizer/hpa.h"
#include "optimizer/kairos_pipeline.h"
#include "optimizer/loki.h"
#include "optimizer/mark_pipeline.h"
#include "optimizer/problem.h"

namespace pipescale::optimizer {
namespace {

// FA2 and its baselines solve the same compiled problem (Eq. 3) and differ only in the search.
template <Solution (*kSearch)(const Problem&), const char* kName>
model::Plan OnProblem(const model::Pipeline& pipeline, const model::Workload& workload,
                      const PlannerInput& /*input*/) {
  const Problem problem = Compile(pipeline, workload);
  return ToPlan(pipeline, problem, kSearch(problem), kName);
}

Solution Fa2Search(const Problem& p) { return SolveFa2(p); }
Solution ExactSearch(const Problem& p) { return SolveExact(p); }

constexpr char kFa2[] = "fa2";
constexpr char kDs2[] = "ds2";
constexpr char kInferline[] = "inferline";
constexpr char kGrandslam[] = "grandslam";
constexpr char kExact[] = "exact";

model::Plan Loki(const model::Pipeline& p, const model::Workload& w, const PlannerInput& input) {
  return SolveLoki(p, w,
                   {.solver = input.milp_solver,
                    .running = input.running_variants,
                    .hold_while_starting = input.pods_starting > 0,
                    .pods_starting = input.pods_starting,
                    .running_batches = input.applied_batches});
}

model::Plan Kairos(const model::Pipeline& p, const model::Workload& w,
                   const PlannerInput& /*input*/) {
  return SolveKairos(p, w);
}

// One entry per optimizer. Adding one: its file pair in optimizer/, an entry here, its tests,
// the value in the CRD's spec.optimizer enum (when in_spec) and a row in the README.
const std::array kOptimizers = {
    Descriptor{.name = kFa2,
               .summary = "batch size and replicas per DNN under per-path SLOs, fewest instances",
               .in_spec = true,
               .memory = {.burst_allowance = true,
                          .plans_for_surges = true,
                          .slo_feedback = true,
                          .holds_applied_batches = true},
               .solve = OnProblem<Fa2Search, kFa2>},
    Descriptor{.name = "loki",
               .summary = "hardware scaling, then accuracy scaling with model variants",
               .in_spec = true,
               .data_plane = DataPlane::kRoutingTables,
               .placement = Placement::kPerVariant,
               .memory = {.demand_ewma = true,
                          .window_peak = true,
                          .measured_factors = true,
                          .holds_running_variants = true},
               .solve = Loki},
    Descriptor{.name = "kairos",
               .summary = "the cheapest GPU/CPU mix whose throughput upper bound covers the load",
               .in_spec = true,
               .data_plane = DataPlane::kMatchedPools,
               .placement = Placement::kPerClass,
               .memory = {.measured_mix = true},
               .solve = Kairos},
    Descriptor{.name = "mark",
               .summary = "SLO-aware batching, predictive cost-aware provisioning, SLO guard",
               .in_spec = true,
               .data_plane = DataPlane::kSpillPools,
               .placement = Placement::kPerClass,
               .memory = {.rate_history = true, .slo_guard = true},
               .solve = SolveMark},
    Descriptor{
        .name = "hpa",
        .summary = "baseline: the Kubernetes HPA per task, 70% utilisation of a batching replica",
        .in_spec = true,
        .memory = {.reads_utilization = true},
        .solve = [](const model::Pipeline& pipeline, const model::Workload& workload,
                    const PlannerInput& input) { return SolveHpa(pipeline, workload, input); }},
    Descriptor{.name = kDs2,
               .summary = "FA2's baseline: DS2's per-operator scaling",
               .solve = OnProblem<SolveDs2, kDs2>},
    Descriptor{.name = kInferline,
               .summary = "FA2's baseline: InferLine's planner",
               .solve = OnProblem<SolveInferline, kInferline>},
    Descriptor{.name = kGrandslam,
               .summary = "FA2's baseline: GrandSLAm's SLO split",
               .solve = OnProblem<SolveGrandslam, kGrandslam>},
    Descriptor{.name = kExact,
               .summary = "the true optimum of FA2's problem (branch and bound), the yardstick",
               .solve = OnProblem<ExactSearch, kExact>},
};

}  // namespace

std::span<const Descriptor> Optimizers() { return kOptimizers; }

const Descriptor* FindOptimizer(std::string_view name) {
  for (const Descriptor& d : kOptimizers) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const Descriptor& OptimizerOf(const model::PipelineSpec& spec) {
  const Descriptor* d = FindOptimizer(spec.optimizer);
  PIPESCALE_CHECK(d != nullptr);  // validation checked the name
  return *d;
}

std::string OptimizerNames(bool in_spec_only) {
  std::string out;
  for (const Descriptor& d : kOptimizers) {
    if (in_spec_only && !d.in_spec) continue;
    out += (out.empty() ? "" : ", ") + std::string(d.name);
  }
  return out;
}

model::Plan Solve(const model::Pipeline& pipeline, const model::Workload& workload,
                  std::string_view name, const PlannerInput& input) {
  const Descriptor* d = FindOptimizer(name);
  PIPESCALE_CHECK(d != nullptr);
  return d->solve(pipeline, workload, input);
}

}  // namespace pipescale::optimizer
