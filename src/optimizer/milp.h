// A mixed-integer linear program as plain data, and its solution by COIN-OR CBC. Models are
// built here without touching the solver; SolveMilp is the one place that calls CBC.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace pipescale::optimizer {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct MilpTerm {
  int var = 0;
  double coef = 0;
};

class Milp {
 public:
  enum class Sense { kMinimize, kMaximize };

  // Returns the variable's index.
  int AddVar(double lower, double upper, double objective, bool integer);
  int AddBinary(double objective = 0) { return AddVar(0, 1, objective, true); }
  // lower <= sum(terms) <= upper. A row bounded on both sides becomes two rows: CBC's C
  // interface mishandles ranged rows.
  void AddRow(std::vector<MilpTerm> terms, double lower, double upper);
  void SetObjective(int var, double coef) { vars_[var].objective = coef; }
  void SetBounds(int var, double lower, double upper);
  void set_sense(Sense sense) { sense_ = sense; }

  // Narrows one variable's bounds (intersected with its own) in an alternative.
  struct Bound {
    int var = 0;
    double lower = 0, upper = 0;
  };
  // With alternatives the MILP is their union: each one's bounds narrow the variables, and the
  // solution is the best of any. A model whose LP relaxation is weak over its whole space can be
  // tight in each part (Loki's, split by the batch time each task may take); SolveMilp then
  // searches the parts from the best LP bound down.
  void AddAlternative(std::vector<Bound> bounds) { alternatives_.push_back(std::move(bounds)); }
  const std::vector<std::vector<Bound>>& alternatives() const { return alternatives_; }
  void ClearAlternatives() { alternatives_.clear(); }

  struct Var {
    double lower = 0, upper = kInfinity, objective = 0;
    bool integer = false;
  };
  struct Row {
    std::vector<MilpTerm> terms;
    double lower = -kInfinity, upper = kInfinity;
  };
  const std::vector<Var>& vars() const { return vars_; }
  const std::vector<Row>& rows() const { return rows_; }
  Sense sense() const { return sense_; }

 private:
  std::vector<Var> vars_;
  std::vector<Row> rows_;
  std::vector<std::vector<Bound>> alternatives_;
  Sense sense_ = Sense::kMinimize;
};

struct MilpOptions {
  // CBC's own clock overruns its limit by up to 2x, so it is given half of this.
  double time_limit_seconds = 1.0;
  double relative_gap = 1e-6;
  // CBC's cut generators; off makes Loki's models 5-10x faster to prove optimal (measured on
  // deploy/examples/loki-traffic.yaml: their LP bound is weak in ways cuts do not fix).
  bool cuts = true;
};

enum class MilpStatus {
  kOptimal,     // proven optimal within the gap
  kFeasible,    // stopped by the time limit with a solution
  kInfeasible,  // proven infeasible
  kNoSolution,  // stopped by the time limit before finding any solution
  kFailed,      // the solver ended without an answer (its process died: MilpSolution::failure)
};

const char* MilpStatusName(MilpStatus status);

struct MilpSolution {
  MilpStatus status = MilpStatus::kNoSolution;
  double objective = 0;
  std::vector<double> values;  // one per variable; empty without a solution
  std::string failure;         // why, with kFailed

  bool HasSolution() const { return !values.empty(); }
};

// With alternatives: the LP bound of each, then each solved from the best bound down, required to
// beat the best solution so far by the relative gap, until no bound left can; kOptimal when every
// alternative was solved or ruled out within the time limit.
MilpSolution SolveMilp(const Milp& milp, const MilpOptions& options = {});

// Another way to solve: the operator solves in a child process (src/solver/), where a CBC or
// CLP abort (coin-or/Clp#173) ends the child only. Empty: SolveMilp, here.
using MilpSolver = std::function<MilpSolution(const Milp&, const MilpOptions&)>;

inline MilpSolution SolveMilpWith(const MilpSolver& solver, const Milp& milp,
                                  const MilpOptions& options) {
  return solver ? solver(milp, options) : SolveMilp(milp, options);
}

}  // namespace pipescale::optimizer
