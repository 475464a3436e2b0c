#include "optimizer/baselines.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "common/check.h"
#include "common/strings.h"

namespace pipescale::optimizer {
namespace {

// The baselines scale one hardware class per DNN: the one fastest at b = 1. Its choices by
// ascending batch size form the DNN's ladder.
std::vector<std::vector<Choice>> Ladders(const Problem& problem) {
  std::vector<std::vector<Choice>> ladders;
  for (const Dnn& dnn : problem.dnns) {
    const Choice* fastest = nullptr;
    for (const Choice& c : dnn.choices) {
      if (c.batch == 1 && (fastest == nullptr || c.exec_ms < fastest->exec_ms)) fastest = &c;
    }
    PIPESCALE_CHECK(fastest != nullptr);  // Compile gives every profile a b = 1 choice
    std::vector<Choice> ladder;
    for (const Choice& c : dnn.choices) {
      if (c.hardware_class == fastest->hardware_class) ladder.push_back(c);
    }
    ladders.push_back(std::move(ladder));
  }
  return ladders;
}

// Baselines do not promise SLOs; the status says whether this plan happens to meet them.
Solution Judge(const Problem& problem, Assignment assignment) {
  Solution solution;
  solution.assignment = std::move(assignment);
  solution.status = model::SolveStatus::kFeasible;
  for (size_t r = 0; r < problem.routes.size(); ++r) {
    const double latency = RouteLatencyMs(problem, solution.assignment, static_cast<int>(r));
    if (latency > problem.routes[r].slo_ms + 1e-9) {
      solution.status = model::SolveStatus::kInfeasible;
      solution.notes.push_back(StrFormat("path %s: predicted %.1f ms exceeds its SLO of %.1f ms",
                                         problem.routes[r].name.c_str(), latency,
                                         problem.routes[r].slo_ms));
    }
  }
  return solution;
}

// Whether every route through DNN s meets its SLO; the other routes do not change with s.
// `work` counts the DNNs summed, for InferLine's budget.
bool RoutesOfFit(const Problem& problem, const Assignment& assignment, int s, std::int64_t& work) {
  for (int r : problem.dnns[s].routes) {
    work += static_cast<std::int64_t>(problem.routes[r].dnns.size());
    if (RouteLatencyMs(problem, assignment, r) > problem.routes[r].slo_ms + 1e-9) return false;
  }
  return true;
}

// InferLine's greedy stops after this many route terms summed (about a second of work): far
// beyond any pipeline of ordinary size, and the plan it has by then meets every SLO.
constexpr std::int64_t kInferlineWork = 200'000'000;

}  // namespace

Solution SolveDs2(const Problem& problem) {
  if (!problem.too_large.empty()) return RefuseTooLarge(problem);
  Assignment assignment;
  for (const auto& ladder : Ladders(problem)) assignment.push_back(ladder.front());
  return Judge(problem, std::move(assignment));
}

Solution SolveInferline(const Problem& problem) {
  if (!problem.too_large.empty()) return RefuseTooLarge(problem);
  const auto ladders = Ladders(problem);
  std::vector<size_t> step(ladders.size(), 0);
  Assignment assignment;
  for (const auto& ladder : ladders) assignment.push_back(ladder.front());
  if (!MeetsSlos(problem, assignment)) return Judge(problem, std::move(assignment));

  // Raise one DNN's batch size at a time, the one that saves the most replicas (then adds the
  // least latency), while every path still meets its SLO. Local: it never lowers a batch size
  // to make room for another DNN.
  std::int64_t work = 0;
  while (work < kInferlineWork) {
    int pick = -1;
    int best_saving = std::numeric_limits<int>::min();
    double best_added = 0;
    for (size_t s = 0; s < ladders.size(); ++s) {
      if (step[s] + 1 >= ladders[s].size()) continue;
      const Choice& next = ladders[s][step[s] + 1];
      const Choice saved = assignment[s];
      assignment[s] = next;
      const bool ok = RoutesOfFit(problem, assignment, static_cast<int>(s), work);
      assignment[s] = saved;
      if (!ok) continue;
      const int saving = saved.replicas - next.replicas;
      const double added = next.LatencyMs() - saved.LatencyMs();
      if (saving > best_saving || (saving == best_saving && added < best_added)) {
        pick = static_cast<int>(s);
        best_saving = saving;
        best_added = added;
      }
    }
    if (pick < 0) break;
    assignment[pick] = ladders[pick][++step[pick]];
  }
  Solution solution = Judge(problem, std::move(assignment));
  if (work >= kInferlineWork) {
    solution.notes.emplace_back(
        "inferline stopped at its search budget; the plan is the last step");
  }
  return solution;
}

Solution SolveGrandslam(const Problem& problem) {
  if (!problem.too_large.empty()) return RefuseTooLarge(problem);
  const auto ladders = Ladders(problem);
  Assignment assignment;
  for (size_t s = 0; s < problem.dnns.size(); ++s) {
    const Dnn& dnn = problem.dnns[s];
    // The DNN's share of each path SLA by intensity; the tightest path decides.
    double share = std::numeric_limits<double>::infinity();
    for (int r : dnn.routes) {
      double total = 0;
      for (int d : problem.routes[r].dnns) total += problem.dnns[d].intensity_ms;
      share = std::min(share, problem.routes[r].slo_ms * dnn.intensity_ms / total);
    }
    Choice pick = ladders[s].front();
    for (const Choice& c : ladders[s]) {
      if (c.LatencyMs() <= share) pick = c;
    }
    assignment.push_back(pick);
  }
  return Judge(problem, std::move(assignment));
}

}  // namespace pipescale::optimizer
