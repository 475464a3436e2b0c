// Runs the `pipescale` command line in-process, as tests of its commands do: what it returned,
// printed and said.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace pipescale::testing {

struct CliOutput {
  int code = 0;
  std::string out;
  std::string err;
};

inline CliOutput RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = cli::Run(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace pipescale::testing
