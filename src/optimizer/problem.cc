#include "optimizer/problem.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "common/check.h"
#include "common/strings.h"

namespace pipescale::optimizer {
namespace {

constexpr double kEps = 1e-9;

int ReplicasFor(double rate_rps, double exec_ms, int batch) {
  const double needed = rate_rps * exec_ms / (1000.0 * batch);  // lambda / h(b)
  return std::max(1, static_cast<int>(std::ceil(needed - kEps)));
}

// Keeps the choices that no other choice beats on latency and all objective terms at once.
std::vector<Choice> ParetoFront(std::vector<Choice> choices) {
  std::sort(choices.begin(), choices.end(), [](const Choice& x, const Choice& y) {
    if (x.LatencyMs() != y.LatencyMs()) return x.LatencyMs() < y.LatencyMs();
    return x.Cost() < y.Cost();
  });
  std::vector<Choice> front;
  for (const Choice& c : choices) {
    const bool dominated = std::any_of(front.begin(), front.end(), [&](const Choice& f) {
      return f.replicas <= c.replicas && f.cost_micro <= c.cost_micro && f.batch <= c.batch;
    });
    if (!dominated) front.push_back(c);
  }
  return front;
}

std::vector<int> TopologicalOrder(const std::vector<Dnn>& dnns) {
  std::vector<int> indegree(dnns.size(), 0);
  for (const Dnn& d : dnns) {
    for (int s : d.successors) ++indegree[s];
  }
  std::queue<int> ready;
  for (size_t i = 0; i < dnns.size(); ++i) {
    if (indegree[i] == 0) ready.push(static_cast<int>(i));
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int u = ready.front();
    ready.pop();
    order.push_back(u);
    for (int s : dnns[u].successors) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  PIPESCALE_CHECK(order.size() == dnns.size());  // validation rejects cycles
  return order;
}

}  // namespace

Problem Compile(const model::Pipeline& pipeline, const model::Workload& workload) {
  const model::PipelineSpec& spec = pipeline.spec;
  Problem problem;
  problem.dnns.resize(spec.tasks.size());

  for (const model::Path& path : spec.paths) {
    Route route{.name = path.name, .dnns = {}, .slo_ms = path.slo_ms, .rate_rps = 0};
    if (auto it = workload.path_rates_rps.find(path.name); it != workload.path_rates_rps.end()) {
      route.rate_rps = it->second;
    }
    for (const std::string& task : path.tasks) {
      const int index = pipeline.TaskIndex(task);
      PIPESCALE_CHECK(index >= 0);
      route.dnns.push_back(index);
      problem.dnns[index].rate_rps += route.rate_rps;
      problem.dnns[index].routes.push_back(static_cast<int>(problem.routes.size()));
    }
    problem.routes.push_back(std::move(route));
  }

  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const model::Task& task = spec.tasks[i];
    Dnn& dnn = problem.dnns[i];
    dnn.task = task.name;
    const model::Variant& variant = task.MostAccurateVariant();
    dnn.variant = static_cast<int>(&variant - task.variants.data());
    for (const model::Edge& e : task.next) dnn.successors.push_back(pipeline.TaskIndex(e.task));

    for (const model::Profile& profile : variant.profiles) {
      const int hw = pipeline.HardwareClassIndex(profile.hardware_class);
      PIPESCALE_CHECK(hw >= 0);
      const double price = spec.hardware_classes[hw].cost_per_hour;
      // Without traffic a batch never fills, so only b = 1 is meaningful.
      const int max_batch = dnn.rate_rps > 0 ? profile.latency.MaxBatch(variant.max_batch) : 1;
      for (int b = 1; b <= max_batch; ++b) {
        Choice c;
        c.hardware_class = hw;
        c.batch = b;
        c.exec_ms = profile.latency.Ms(b);
        c.queue_ms = b == 1 ? 0.0 : 1000.0 * (b - 1) / dnn.rate_rps;
        c.replicas = ReplicasFor(dnn.rate_rps, c.exec_ms, b);
        c.cost_micro = std::lround(c.replicas * price * 1e6);
        dnn.choices.push_back(c);
      }
    }
    PIPESCALE_CHECK(!dnn.choices.empty());
    dnn.front = ParetoFront(dnn.choices);

    // Intensity: mean processing time over b = 1..16 on the fastest class (IV.D).
    double sum = 0;
    int count = 0;
    for (int b = 1; b <= 16; ++b) {
      double best = -1;
      for (const Choice& c : dnn.choices) {
        if (c.batch == b && (best < 0 || c.exec_ms < best)) best = c.exec_ms;
      }
      if (best < 0) break;
      sum += best;
      ++count;
    }
    dnn.intensity_ms = sum / count;
  }
  problem.topological_order = TopologicalOrder(problem.dnns);
  return problem;
}

double RouteLatencyMs(const Problem& problem, const Assignment& assignment, int route) {
  double total = 0;
  for (int d : problem.routes[route].dnns) total += assignment[d].LatencyMs();
  return total;
}

bool MeetsSlos(const Problem& problem, const Assignment& assignment) {
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    if (RouteLatencyMs(problem, assignment, static_cast<int>(r)) >
        problem.routes[r].slo_ms + kEps) {
      return false;
    }
  }
  return true;
}

Objective Total(const Assignment& assignment) {
  Objective total;
  for (const Choice& c : assignment) total += c.Cost();
  return total;
}

Assignment Fastest(const Problem& problem) {
  Assignment fastest;
  for (const Dnn& d : problem.dnns) fastest.push_back(d.front.front());
  return fastest;
}

Objective LowerBound(const Problem& problem) {
  const Assignment fastest = Fastest(problem);
  Objective bound;
  for (size_t s = 0; s < problem.dnns.size(); ++s) {
    const Dnn& dnn = problem.dnns[s];
    double max_latency = std::numeric_limits<double>::infinity();
    for (int r : dnn.routes) {
      const double others = RouteLatencyMs(problem, fastest, r) - fastest[s].LatencyMs();
      max_latency = std::min(max_latency, problem.routes[r].slo_ms - others);
    }
    // Lexicographic order is compatible with addition, so the sum of per-DNN minima bounds
    // the sum of any feasible choices.
    Objective cheapest = Objective::Infinite();
    for (const Choice& c : dnn.front) {
      if (c.LatencyMs() > max_latency + kEps) break;
      cheapest = std::min(cheapest, c.Cost());
    }
    if (cheapest.IsInfinite()) return Objective::Infinite();
    bound += cheapest;
  }
  return bound;
}

std::vector<std::string> ImpossibleRoutes(const Problem& problem) {
  const Assignment fastest = Fastest(problem);
  std::vector<std::string> notes;
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    const double best = RouteLatencyMs(problem, fastest, static_cast<int>(r));
    if (best > problem.routes[r].slo_ms + kEps) {
      notes.push_back(StrFormat("path %s: SLO %.1f ms is below the fastest possible %.1f ms",
                                problem.routes[r].name.c_str(), problem.routes[r].slo_ms, best));
    }
  }
  return notes;
}

model::Plan ToPlan(const model::Pipeline& pipeline, const Problem& problem,
                   const Solution& solution, const std::string& optimizer) {
  const Assignment& assignment = solution.assignment;
  model::Plan plan;
  for (size_t i = 0; i < problem.dnns.size(); ++i) {
    const Dnn& dnn = problem.dnns[i];
    const Choice& c = assignment[i];
    plan.tasks.push_back({
        .task = dnn.task,
        .variant = pipeline.spec.tasks[i].variants[dnn.variant].name,
        .hardware_class = pipeline.spec.hardware_classes[c.hardware_class].name,
        .replicas = c.replicas,
        .batch_size = c.batch,
        .latency_ms = c.exec_ms,
        .queue_ms = c.queue_ms,
    });
  }
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    plan.paths.push_back(
        {.name = problem.routes[r].name,
         .slo_ms = problem.routes[r].slo_ms,
         .predicted_latency_ms = RouteLatencyMs(problem, assignment, static_cast<int>(r))});
  }
  plan.report = {.optimizer = optimizer,
                 .status = solution.status,
                 .objective = static_cast<double>(plan.TotalReplicas()),
                 .solve_ms = 0,
                 .notes = solution.notes,
                 // FA2 and its baselines note only the paths that miss their SLO when infeasible.
                 .reasons = solution.status == model::SolveStatus::kInfeasible
                                ? solution.notes
                                : std::vector<std::string>{}};
  return plan;
}

}  // namespace pipescale::optimizer
