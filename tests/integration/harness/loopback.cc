#include "integration/harness/loopback.h"

#include <cstdlib>
#include <filesystem>

namespace pipescale::testing {

using namespace std::chrono_literals;

Started StartModelServer(const ModelServerOptions& options, const std::string& host,
                         const std::string& dir) {
  const std::string port_file = dir + "/" + host + ".port";
  std::filesystem::remove(port_file);  // a restarted server writes its own
  // The emulator reads its batch limit where a pod's would be: the environment it inherits.
  setenv("MAX_BATCH_SIZE", std::to_string(options.batch).c_str(), 1);
  Started out;
  std::vector<std::string> argv = {PIPESCALE_MODEL_SERVER,
                                   "--model",
                                   options.task,
                                   "--host",
                                   host,
                                   "--port",
                                   "0",
                                   "--port-file",
                                   port_file,
                                   "--latency-ms",
                                   options.latency_ms,
                                   "--max-wait-ms",
                                   std::to_string(options.max_wait_ms)};
  argv.insert(argv.end(), options.more.begin(), options.more.end());
  out.process = std::make_unique<Process>(argv, dir + "/" + host + ".log");
  out.ports = WaitForPorts(port_file, 10s);
  return out;
}

Started StartRouter(const std::string& pipeline_file, const std::string& endpoints,
                    const std::vector<std::string>& more, const std::string& dir) {
  const std::string port_file = dir + "/router.port";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv = {
      PIPESCALE_ROUTER, "--pipeline-file",  pipeline_file, "--endpoints", endpoints, "--listen",
      "127.0.0.1:0",    "--metrics-listen", "127.0.0.1:0", "--port-file", port_file};
  argv.insert(argv.end(), more.begin(), more.end());
  Started out;
  out.process = std::make_unique<Process>(argv, dir + "/router.log");
  out.ports = WaitForPorts(port_file, 10s);
  return out;
}

}  // namespace pipescale::testing
