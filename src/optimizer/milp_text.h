// A MILP and its solution as text, exact to the last bit (hexadecimal floats): what passes
// between the operator and the child process that solves its MILPs (src/solver/).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"
#include "optimizer/milp.h"

namespace pipescale::optimizer {

std::string WriteMilp(const Milp& milp, const MilpOptions& options);
// kInvalid, naming the line, for text WriteMilp did not write.
Result<std::pair<Milp, MilpOptions>> ReadMilp(std::string_view text);

std::string WriteMilpSolution(const MilpSolution& solution);
// kInvalid for text WriteMilpSolution did not write, or with another count of values than
// `vars` when it has a solution.
Result<MilpSolution> ReadMilpSolution(std::string_view text, size_t vars);

}  // namespace pipescale::optimizer
