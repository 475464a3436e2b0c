// MILPs solved in a child process. CBC and CLP end the process on a failed assertion inside the
// library (coin-or/Clp#173), which no try/catch can stop: in a child it ends the child only,
// and not the operator that plans every tenant's pipelines.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "optimizer/milp.h"

namespace pipescale::solver {

// A MilpSolver that runs `command` (its argv; the operator runs itself with --solve-milp),
// writes the MILP to its stdin and reads the solution from its stdout. The child is killed once
// the MILP's time limit has passed twice over, plus a few seconds to start. A child that dies,
// overruns or answers what does not read gives kFailed with the reason, counted and logged as
// a panic of component "milp-solver".
optimizer::MilpSolver ChildProcessSolver(std::vector<std::string> command);

// The child's side: reads a MILP from `in`, solves it with CBC here, writes the solution to
// `out`. The process's exit code: 0, or 2 when the input is not a MILP (said on stderr).
int ServeMilp(std::FILE* in, std::FILE* out);

}  // namespace pipescale::solver
