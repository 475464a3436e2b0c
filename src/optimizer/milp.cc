#include "optimizer/milp.h"

#include <coin/Cbc_C_Interface.h>

#include <cmath>
#include <memory>

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

MilpSolution SolveMilp(const Milp& milp, const MilpOptions& options) {
  const auto& vars = milp.vars();
  const auto& rows = milp.rows();
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
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
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].integer) Cbc_setInteger(model.get(), static_cast<int>(i));
  }
  Cbc_setObjSense(model.get(), milp.sense() == Milp::Sense::kMaximize ? -1 : 1);
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

}  // namespace pipescale::optimizer
