#include "optimizer/milp.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "common/check.h"

namespace pipescale::optimizer {

int Milp::AddVar(double lower, double upper, double objective, bool integer) {
  PIPESCALE_CHECK(lower <= upper);
  vars_.push_back({lower, upper, objective, integer});
  return static_cast<int>(vars_.size()) - 1;
}

void Milp::SetBounds(int var, double lower, double upper) {
  PIPESCALE_CHECK(lower <= upper);
  vars_[var].lower = lower;
  vars_[var].upper = upper;
}

void Milp::AddRow(std::vector<MilpTerm> terms, double lower, double upper) {
  PIPESCALE_CHECK(lower <= upper);
  if (std::isfinite(lower) && std::isfinite(upper) && lower != upper) {
    rows_.push_back({terms, lower, kInfinity});
    rows_.push_back({std::move(terms), -kInfinity, upper});
    return;
  }
  rows_.push_back({std::move(terms), lower, upper});
}

const char* MilpStatusName(MilpStatus status) {
  switch (status) {
    case MilpStatus::kOptimal:
      return "Optimal";
    case MilpStatus::kFeasible:
      return "Feasible";
    case MilpStatus::kInfeasible:
      return "Infeasible";
    case MilpStatus::kNoSolution:
      return "NoSolution";
    case MilpStatus::kFailed:
      return "Failed";
  }
  return "Unknown";
}

namespace {

using CbcModel = std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)>;

// The model in CBC, its integers relaxed with `relax`.
CbcModel Load(const Milp& milp, bool relax) {
  const auto& vars = milp.vars();
  const auto& rows = milp.rows();
  CbcModel model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_setLogLevel(model.get(), 0);

  // Column-major matrix for Cbc_loadProblem.
  std::vector<std::vector<std::pair<int, double>>> columns(vars.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    for (const MilpTerm& t : rows[r].terms) {
      if (t.coef != 0) columns[t.var].emplace_back(static_cast<int>(r), t.coef);
    }
  }
  std::vector<CoinBigIndex> start{0};
  std::vector<int> index;
  std::vector<double> value;
  for (const auto& column : columns) {
    for (const auto& [r, coef] : column) {
      index.push_back(r);
      value.push_back(coef);
    }
    start.push_back(static_cast<CoinBigIndex>(index.size()));
  }
  // CBC spells infinity as COIN_DBL_MAX.
  auto finite = [](double v) { return std::isfinite(v) ? v : (v > 0 ? 1e300 : -1e300); };
  std::vector<double> col_lb, col_ub, obj, row_lb, row_ub;
  for (const auto& v : vars) {
    col_lb.push_back(finite(v.lower));
    col_ub.push_back(finite(v.upper));
    obj.push_back(v.objective);
  }
  for (const auto& r : rows) {
    row_lb.push_back(finite(r.lower));
    row_ub.push_back(finite(r.upper));
  }
  Cbc_loadProblem(model.get(), static_cast<int>(vars.size()), static_cast<int>(rows.size()),
                  start.data(), index.data(), value.data(), col_lb.data(), col_ub.data(),
                  obj.data(), row_lb.data(), row_ub.data());
  for (size_t i = 0; i < vars.size() && !relax; ++i) {
    if (vars[i].integer) Cbc_setInteger(model.get(), static_cast<int>(i));
  }
  Cbc_setObjSense(model.get(), milp.sense() == Milp::Sense::kMaximize ? -1 : 1);
  return model;
}

// One MILP, its alternatives ignored.
MilpSolution SolveOne(const Milp& milp, const MilpOptions& options) {
  const auto& vars = milp.vars();
  CbcModel model = Load(milp, false);
  Cbc_setMaximumSeconds(model.get(), options.time_limit_seconds / 2);
  Cbc_setAllowableFractionGap(model.get(), options.relative_gap);
  if (!options.cuts) Cbc_setParameter(model.get(), "cuts", "off");
  Cbc_solve(model.get());

  MilpSolution out;
  const bool has_solution =
      Cbc_numberSavedSolutions(model.get()) > 0 || Cbc_isProvenOptimal(model.get());
  if (Cbc_isProvenOptimal(model.get())) {
    out.status = MilpStatus::kOptimal;
  } else if (Cbc_isProvenInfeasible(model.get())) {
    out.status = MilpStatus::kInfeasible;
  } else {
    out.status = has_solution ? MilpStatus::kFeasible : MilpStatus::kNoSolution;
  }
  if (out.status == MilpStatus::kOptimal || out.status == MilpStatus::kFeasible) {
    const double* x = Cbc_getColSolution(model.get());
    out.values.assign(x, x + vars.size());
    // Integers come back as 2.9999999; callers read them rounded.
    for (size_t i = 0; i < vars.size(); ++i) {
      if (vars[i].integer) out.values[i] = std::round(out.values[i]);
    }
    out.objective = Cbc_getObjValue(model.get());
  }
  return out;
}

// The LP relaxation's optimum; nullopt when it is proven infeasible. An LP that CLP could not
// solve bounds nothing: its part is searched first rather than dropped as if it were empty.
std::optional<double> LpBound(const Milp& milp) {
  CbcModel model = Load(milp, true);
  Cbc_solve(model.get());
  if (Cbc_isProvenOptimal(model.get())) return Cbc_getObjValue(model.get());
  if (Cbc_isProvenInfeasible(model.get())) return std::nullopt;
  return milp.sense() == Milp::Sense::kMaximize ? kInfinity : -kInfinity;
}

// The MILP narrowed to one alternative, without alternatives; nullopt when a bound is empty.
std::optional<Milp> Narrowed(const Milp& milp, const std::vector<Milp::Bound>& bounds) {
  Milp out = milp;
  for (const Milp::Bound& b : bounds) {
    const Milp::Var& v = out.vars()[b.var];
    const double lower = std::max(v.lower, b.lower), upper = std::min(v.upper, b.upper);
    if (lower > upper) return std::nullopt;
    out.SetBounds(b.var, lower, upper);
  }
  out.ClearAlternatives();
  return out;
}

// Whether `a` is better than `b` by the relative gap, in the MILP's sense.
bool Beats(double a, double b, Milp::Sense sense, double gap) {
  const double margin = gap * std::abs(b);
  return sense == Milp::Sense::kMaximize ? a > b + margin : a < b - margin;
}

// The search over alternatives (SolveMilp's comment). The time limit is shared without a clock
// (the optimizer reads none): the part of the best bound, which usually holds the optimum, may
// take half of it, the others share the rest; the LPs take milliseconds and are not counted.
MilpSolution SolveAlternatives(const Milp& milp, const MilpOptions& options) {
  const bool maximize = milp.sense() == Milp::Sense::kMaximize;
  std::vector<std::pair<double, Milp>> parts;  // LP bound, part
  bool complete = true;
  for (const auto& bounds : milp.alternatives()) {
    std::optional<Milp> part = Narrowed(milp, bounds);
    if (!part) continue;
    if (std::optional<double> bound = LpBound(*part)) parts.emplace_back(*bound, std::move(*part));
  }
  std::stable_sort(parts.begin(), parts.end(), [&](const auto& a, const auto& b) {
    return maximize ? a.first > b.first : a.first < b.first;
  });
  MilpSolution best;
  for (auto& [bound, part] : parts) {
    if (best.HasSolution() && !Beats(bound, best.objective, milp.sense(), options.relative_gap)) {
      break;  // no part left can beat it: parts are in bound order
    }
    if (best.HasSolution()) {  // only a better solution is of use
      std::vector<MilpTerm> objective;
      for (size_t i = 0; i < part.vars().size(); ++i) {
        if (part.vars()[i].objective != 0) {
          objective.push_back({static_cast<int>(i), part.vars()[i].objective});
        }
      }
      const double margin = options.relative_gap * std::abs(best.objective);
      part.AddRow(std::move(objective), maximize ? best.objective + margin : -kInfinity,
                  maximize ? kInfinity : best.objective - margin);
    }
    MilpOptions limited = options;
    limited.time_limit_seconds =
        &part == &parts.front().second
            ? options.time_limit_seconds / 2
            : options.time_limit_seconds / 2 / static_cast<double>(parts.size() - 1);
    MilpSolution solution = SolveOne(part, limited);
    if (solution.status == MilpStatus::kFeasible || solution.status == MilpStatus::kNoSolution) {
      complete = false;
    }
    if (solution.HasSolution() &&
        (!best.HasSolution() || Beats(solution.objective, best.objective, milp.sense(), 0))) {
      best = std::move(solution);
    }
  }
  best.status = best.HasSolution() ? (complete ? MilpStatus::kOptimal : MilpStatus::kFeasible)
                                   : (complete ? MilpStatus::kInfeasible : MilpStatus::kNoSolution);
  return best;
}

}  // namespace

MilpSolution SolveMilp(const Milp& milp, const MilpOptions& options) {
  return milp.alternatives().empty() ? SolveOne(milp, options) : SolveAlternatives(milp, options);
}

}  // namespace pipescale::optimizer
