#include "common/file.h"

#include <fstream>
#include <sstream>

namespace pipescale {

Result<std::string> ReadFileText(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{ErrorKind::kNotFound, "cannot read " + (what.empty() ? "" : what + " ") + path};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace pipescale
