// Loki's latency rule, a batch-time budget per task, and the split of its MILP by those
// budgets that makes it fast to prove (bench/README.md, Loki).
#pragma once

#include "optimizer/loki_model.h"
#include "optimizer/milp.h"

namespace pipescale::optimizer::loki {

// The latency rule: each task's running configs take at most its budget of batch time, and the
// budgets of the tasks of each path with load sum within the path's budget (Instance). Then any
// running variant of a task may pass a request to any running variant of the next, as
// MostAccurateFirst's tables and the backups do, within the SLO. (Loki's paper bounds each
// variant path that carries traffic instead, which only holds when the router pairs variants
// exactly as the plan's shares do, and whose big-M rows make the MILP slow to prove.) Adds a
// budget column per task to `col`.
void AddBudgets(const Instance& in, Columns& col, Milp& milp);

// Splits the MILP into alternatives, one per maximal vector of the tasks' budgets, each with
// the config of the most throughput per variant and class within its budget fixed; none past
// kMaxSplits (the MILP is then solved whole).
void AddBudgetSplits(const Instance& in, const Columns& col, Step step, Milp& milp);

// A running batch stays while a smaller one would carry its load with less than this share of
// its capacity to spare: at a steady load the measured rate and objects per frame wander across
// the rate at which one batch gives way to another, and each look would change it.
inline constexpr double kBatchKeepBand = 0.1;

// Moves each variant's replicas to the config of the same class with the shortest batch time
// that still carries the variant's load in `solution`; or to the one it runs now
// (Vertex::running_batch), if shorter than the solution's and carrying the load, while the
// shortest would carry it without kBatchKeepBand to spare.
void ShortestBatches(const Instance& in, const Columns& col, MilpSolution& solution);

}  // namespace pipescale::optimizer::loki
