// MILPs solved in a child process: the operator itself as the child gives what CBC gives in
// this process, and a child that dies, hangs or talks nonsense gives kFailed, counted, while
// this process lives on. The dying, hanging and babbling children are fakes (a shell), named
// as such: CLP's assertion (coin-or/Clp#173) cannot be made to fire on demand.
#include "solver/child_process.h"

#include <gtest/gtest.h>

#include <random>

#include "common/guard.h"

namespace pipescale::solver {
namespace {

using optimizer::Milp;
using optimizer::MilpStatus;

// A knapsack of `items` random items: max value within a weight limit.
Milp Knapsack(std::mt19937& rng, int items) {
  Milp milp;
  milp.set_sense(Milp::Sense::kMaximize);
  std::vector<optimizer::MilpTerm> weight;
  for (int i = 0; i < items; ++i) {
    const int v = milp.AddVar(0, std::uniform_int_distribution(1, 3)(rng),
                              std::uniform_int_distribution(1, 40)(rng), true);
    weight.push_back({v, static_cast<double>(std::uniform_int_distribution(1, 30)(rng))});
  }
  milp.AddRow(std::move(weight), -optimizer::kInfinity, 10.0 * items);
  return milp;
}

TEST(ChildProcessSolver, TheOperatorAsTheChildSolvesAsThisProcessDoes) {
  const auto solver = ChildProcessSolver({PIPESCALE_OPERATOR, "--solve-milp"});
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    const Milp milp = Knapsack(rng, 2 + i);
    const auto here = optimizer::SolveMilp(milp);
    const auto there = solver(milp, {});
    ASSERT_EQ(there.status, here.status) << there.failure;
    EXPECT_EQ(there.objective, here.objective);
    EXPECT_EQ(there.values, here.values);
  }
}

void ExpectFailed(const optimizer::MilpSolution& solution, const std::string& why) {
  EXPECT_EQ(solution.status, MilpStatus::kFailed);
  EXPECT_FALSE(solution.HasSolution());
  EXPECT_NE(solution.failure.find(why), std::string::npos) << solution.failure;
}

TEST(ChildProcessSolver, AChildThatAbortsEndsOnlyItself) {
  std::mt19937 rng(5);
  const auto before = PanicCounts()["milp-solver"];
  const auto fake_that_aborts = ChildProcessSolver({"/bin/sh", "-c", "kill -ABRT $$"});
  ExpectFailed(fake_that_aborts(Knapsack(rng, 50), {}), "signal 6 (ABRT)");
  EXPECT_EQ(PanicCounts()["milp-solver"], before + 1);
}

TEST(ChildProcessSolver, AChildThatAnswersNonsenseOrNothingFails) {
  std::mt19937 rng(5);
  const Milp milp = Knapsack(rng, 5);
  ExpectFailed(
      ChildProcessSolver({"/bin/sh", "-c", "cat >/dev/null; echo solution Optimal"})(milp, {}),
      "answer");
  ExpectFailed(ChildProcessSolver({"/bin/sh", "-c", "exit 3"})(milp, {}), "exited 3");
  ExpectFailed(ChildProcessSolver({"/nonexistent/solver"})(milp, {}), "cannot start");
}

// The child neither reads nor answers: killed once its time is up.
TEST(ChildProcessSolver, AChildThatHangsIsKilled) {
  std::mt19937 rng(5);
  const auto fake_that_hangs = ChildProcessSolver({"/bin/sh", "-c", "exec sleep 60"});
  ExpectFailed(fake_that_hangs(Knapsack(rng, 20000), {.time_limit_seconds = 0}), "overran");
}

}  // namespace
}  // namespace pipescale::solver
