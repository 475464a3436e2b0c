// Every binary's numeric flags, through the real binaries: junk, trailing junk and values out of
// range exit 2 naming the flag on stderr, before the binary does anything else. (They were read
// with atoi/stoi/stod: `--max-in-flight x` made the router answer every request 503, and stoi's
// exception aborted the load generator.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/shell.h"

namespace pipescale {
namespace {

const std::string kPipeline = std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/fa2-gpu.yaml";

struct Outcome {
  int code = 0;
  std::string err;
};

// `command` under a timeout (a binary that took the junk would go on serving), with its stderr
// alone; stdout goes nowhere.
Outcome RunBinary(const std::string& command) {
  const testing::ShellResult r =
      testing::RunShell("(timeout -s KILL 10 " + command + " 3>&1 1>/dev/null 2>&3)");
  return {r.code, r.out};
}

// For each value, `binary base flag value` exits 2 with the flag's name on stderr.
void ExpectRefused(const std::string& binary, const std::string& base, const std::string& flag,
                   const std::vector<std::string>& values) {
  for (const std::string& value : values) {
    const std::string command = binary + " " + base + " " + flag + " '" + value + "'";
    const Outcome r = RunBinary(command);
    EXPECT_EQ(r.code, 2) << command << "\n" << r.err;
    EXPECT_NE(r.err.find(flag + ":"), std::string::npos) << command << "\n" << r.err;
    EXPECT_NE(r.err.find('"' + value + '"'), std::string::npos) << command << "\n" << r.err;
  }
}

const std::vector<std::string> kJunkIntegers = {
    "x", "1x", "", "1.5", " 4", "0x10", "99999999999999999999"};
const std::vector<std::string> kJunkNumbers = {"x", "1x", "", "nan", "inf", "0x10", "1,5"};

TEST(NumericFlags, Router) {
  const std::string base = "--pipeline-file " + kPipeline +
                           " --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --endpoints "
                           "'objd=127.0.0.1:1'";
  for (const char* flag :
       {"--max-in-flight", "--threads", "--grace-ms", "--drain-seconds", "--max-body-bytes"}) {
    ExpectRefused(PIPESCALE_ROUTER, base, flag, kJunkIntegers);
    ExpectRefused(PIPESCALE_ROUTER, base, flag, {"-1"});
  }
  ExpectRefused(PIPESCALE_ROUTER, base, "--max-in-flight", {"0"});
  ExpectRefused(PIPESCALE_ROUTER, base, "--threads", {"0", "100000"});
}

// host:port: a port that is not a number, or out of range, is not port 0.
TEST(NumericFlags, RouterAddresses) {
  const std::string base = "--pipeline-file " + kPipeline;
  const std::string listen = " --metrics-listen 127.0.0.1:0 --endpoints 'objd=127.0.0.1:1'";
  ExpectRefused(PIPESCALE_ROUTER, base + listen, "--listen",
                {"127.0.0.1:x", "127.0.0.1:", "127.0.0.1", "127.0.0.1:65536", "127.0.0.1:-1"});
  // The part that is wrong is quoted, not the whole list.
  for (const std::string endpoints :
       {"objd=127.0.0.1:x", "objd=127.0.0.1:0", "objd=127.0.0.1:70000", "objd=127.0.0.1",
        "objd=127.0.0.1:1@default/gpu/x", "objd=127.0.0.1:1@default/gpu/0"}) {
    const std::string command = std::string(PIPESCALE_ROUTER) + " " + base +
                                " --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --endpoints '" +
                                endpoints + "'";
    const Outcome r = RunBinary(command);
    EXPECT_EQ(r.code, 2) << command << "\n" << r.err;
    EXPECT_NE(r.err.find("--endpoints:"), std::string::npos) << command << "\n" << r.err;
  }
}

TEST(NumericFlags, Operator) {
  ExpectRefused(PIPESCALE_OPERATOR, "--kubeconfig /nonexistent", "--workers",
                {"x", "1x", "0", "", "100000"});
  ExpectRefused(PIPESCALE_OPERATOR, "--kubeconfig /nonexistent", "--metrics-max-age",
                {"x", "1x", "-1", "nan", "1e9"});
}

TEST(NumericFlags, LoadGenerator) {
  const std::string base = "-f " + kPipeline + " --router 127.0.0.1:1 --trace 1:1";
  for (const char* flag : {"--seed", "--timeout-s", "--wait-ready"}) {
    ExpectRefused(PIPESCALE_LOADGEN, base, flag, kJunkIntegers);
  }
  ExpectRefused(PIPESCALE_LOADGEN, base, "--timeout-s", {"0"});
}

// What is not a number is as strict: a flag last on the line without its value, and a trace
// file that cannot be read, exit 2 naming the flag where they ran with a default or an empty
// trace; a --wait-ready that runs out says so before the clients come.
TEST(NumericFlags, LoadGeneratorRefusesAMissingValueOrTraceAndSaysWhenItStopsWaiting) {
  const std::string base = "-f " + kPipeline + " --router 127.0.0.1:1";
  Outcome r = RunBinary(PIPESCALE_LOADGEN + std::string(" ") + base + " --trace 1:1 --report");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--report: needs a value"), std::string::npos) << r.err;
  r = RunBinary(PIPESCALE_LOADGEN + std::string(" ") + base + " --trace csv:/nonexistent.csv");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent.csv"), std::string::npos) << r.err;
  r = RunBinary(PIPESCALE_LOADGEN + std::string(" ") + base +
                " --trace 1:1 --timeout-s 1 --wait-ready 1");
  EXPECT_NE(r.err.find("not ready within 1 s"), std::string::npos) << r.err;
}

TEST(NumericFlags, ModelServer) {
  for (const char* flag : {"--port", "--max-wait-ms", "--queue-timeout-ms", "--max-body-bytes"}) {
    ExpectRefused(PIPESCALE_MODEL_SERVER, "--host 127.0.0.1", flag, kJunkIntegers);
  }
  ExpectRefused(PIPESCALE_MODEL_SERVER, "--host 127.0.0.1", "--port", {"70000"});
  for (const char* flag : {"--startup-seconds", "--factor"}) {
    ExpectRefused(PIPESCALE_MODEL_SERVER, "--host 127.0.0.1", flag, kJunkNumbers);
  }
}

#ifdef PIPESCALE_GYM_VALIDATE
TEST(NumericFlags, Benches) {
  const std::string gym = "-f " + kPipeline + " --box /nonexistent";
  ExpectRefused(PIPESCALE_GYM_VALIDATE, gym, "--seeds", kJunkIntegers);
  ExpectRefused(PIPESCALE_GYM_VALIDATE, gym, "--seeds", {"0"});
  for (const char* flag : {"--overhead-ms", "--to-pod-ms", "--from-pod-ms"}) {
    ExpectRefused(PIPESCALE_GYM_VALIDATE, gym, flag, kJunkNumbers);
  }
  for (const char* flag : {"--pipelines", "--workers", "--settle"}) {
    ExpectRefused(PIPESCALE_OPERATOR_BENCH, "", flag, kJunkIntegers);
  }
  ExpectRefused(PIPESCALE_DATA_PLANE_BENCH, "", "--seconds", kJunkIntegers);
  for (const char* flag : {"--replicas", "--startup-seconds"}) {
    ExpectRefused(PIPESCALE_BATCH_CHANGE_BENCH, "", flag, kJunkIntegers);
  }
  for (const char* flag : {"--rounds", "--connections"}) {
    ExpectRefused(PIPESCALE_ROUTER_BENCH, "", flag, kJunkIntegers);
  }
  ExpectRefused(PIPESCALE_ROUTER_BENCH, "", "--seconds", kJunkNumbers);
  // An empty --rate means each size's own paced rate.
  ExpectRefused(PIPESCALE_ROUTER_BENCH, "", "--rate", {"x", "1x", "nan", "inf", "0x10", "1,5"});
  ExpectRefused(PIPESCALE_ROUTER_BENCH, "", "--tasks", {"x", "0", "65", "1.5"});
}
#endif

}  // namespace
}  // namespace pipescale
