// `pipescale simulate`: the policy gym on the command line (src/gym/simulation.h).
#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace pipescale::cli {

int RunSimulate(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace pipescale::cli
