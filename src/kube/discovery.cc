#include "kube/discovery.h"

#include "common/check.h"

namespace pipescale::kube {

std::optional<std::string> FirstServedVersion(const Client& client,
                                              const std::vector<std::string>& api_versions) {
  PIPESCALE_CHECK(!api_versions.empty());
  for (const std::string& version : api_versions) {
    auto answer = client.Get("/apis/" + version);
    if (answer) return version;
    if (answer.error().kind != ErrorKind::kNotFound) return api_versions.front();
  }
  return std::nullopt;
}

}  // namespace pipescale::kube
