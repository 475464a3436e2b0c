// SolveMilp over a union of alternatives, against exhaustive enumeration of small integer
// programs: the best of any alternative, and the statuses that say what was proven.
#include "optimizer/milp.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>

namespace pipescale::optimizer {
namespace {

constexpr int kVars = 4;
constexpr int kTop = 4;  // each variable is an integer in 0..kTop

struct Program {
  Milp milp;
  std::vector<std::vector<double>> rows;  // coefficients, each row <= its last entry
};

Program Random(std::mt19937& rng) {
  std::uniform_int_distribution<int> coef(-3, 6);
  Program p;
  for (int v = 0; v < kVars; ++v) p.milp.AddVar(0, kTop, coef(rng), true);
  for (int r = 0; r < 3; ++r) {
    std::vector<double> row;
    std::vector<MilpTerm> terms;
    for (int v = 0; v < kVars; ++v) {
      row.push_back(coef(rng));
      terms.push_back({v, row.back()});
    }
    row.push_back(std::uniform_int_distribution<int>(0, 20)(rng));
    p.milp.AddRow(terms, -kInfinity, row.back());
    p.rows.push_back(row);
  }
  p.milp.set_sense(rng() % 2 == 0 ? Milp::Sense::kMaximize : Milp::Sense::kMinimize);
  for (int a = 0; a < 1 + static_cast<int>(rng() % 4); ++a) {
    std::vector<Milp::Bound> bounds;
    for (int v = 0; v < kVars; ++v) {
      if (rng() % 2 == 0) continue;
      const int lower = static_cast<int>(rng() % (kTop + 1));
      bounds.push_back({v, static_cast<double>(lower), static_cast<double>(lower + rng() % 3)});
    }
    p.milp.AddAlternative(std::move(bounds));
  }
  return p;
}

// The best objective over every integer point of any alternative, by enumeration.
std::optional<double> Enumerate(const Program& p) {
  std::optional<double> best;
  const bool maximize = p.milp.sense() == Milp::Sense::kMaximize;
  for (int code = 0; code < 625; ++code) {
    int x[kVars];
    for (int v = 0, c = code; v < kVars; ++v, c /= kTop + 1) x[v] = c % (kTop + 1);
    bool feasible = true;
    for (const auto& row : p.rows) {
      double sum = 0;
      for (int v = 0; v < kVars; ++v) sum += row[v] * x[v];
      feasible = feasible && sum <= row.back() + 1e-9;
    }
    bool inside = false;
    for (const auto& bounds : p.milp.alternatives()) {
      bool in = true;
      for (const Milp::Bound& b : bounds) in = in && x[b.var] >= b.lower && x[b.var] <= b.upper;
      inside = inside || in;
    }
    if (!feasible || !inside) continue;
    double objective = 0;
    for (int v = 0; v < kVars; ++v) objective += p.milp.vars()[v].objective * x[v];
    if (!best || (maximize ? objective > *best : objective < *best)) best = objective;
  }
  return best;
}

TEST(Milp, TheUnionOfAlternativesEqualsEnumeration) {
  std::mt19937 rng(5);
  int infeasible = 0;
  for (int i = 0; i < 150; ++i) {
    const Program p = Random(rng);
    const std::optional<double> want = Enumerate(p);
    const MilpSolution got = SolveMilp(p.milp, {.time_limit_seconds = 10, .relative_gap = 0});
    if (!want) {
      ++infeasible;
      EXPECT_EQ(got.status, MilpStatus::kInfeasible) << "case " << i;
      continue;
    }
    ASSERT_EQ(got.status, MilpStatus::kOptimal) << "case " << i;
    EXPECT_NEAR(got.objective, *want, 1e-6) << "case " << i;
    // The values are a point of one of the alternatives.
    bool inside = false;
    for (const auto& bounds : p.milp.alternatives()) {
      bool in = true;
      for (const Milp::Bound& b : bounds) {
        in = in && got.values[b.var] >= b.lower - 1e-6 && got.values[b.var] <= b.upper + 1e-6;
      }
      inside = inside || in;
    }
    EXPECT_TRUE(inside) << "case " << i;
  }
  EXPECT_GT(infeasible, 5);  // the generator makes both kinds
  EXPECT_LT(infeasible, 100);
}

TEST(Milp, AnAlternativeOutsideTheVariablesBoundsIsEmpty) {
  Milp milp;
  const int x = milp.AddVar(0, 3, 1, true);
  milp.set_sense(Milp::Sense::kMaximize);
  milp.AddAlternative({{x, 5, 7}});  // empty: x <= 3
  EXPECT_EQ(SolveMilp(milp).status, MilpStatus::kInfeasible);
  milp.AddAlternative({{x, 1, 2}});
  const MilpSolution s = SolveMilp(milp);
  ASSERT_EQ(s.status, MilpStatus::kOptimal);
  EXPECT_EQ(s.values[x], 2);
}

}  // namespace
}  // namespace pipescale::optimizer
