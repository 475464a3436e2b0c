// `pipescale profile`'s flags and exit codes before anything is measured: 2 for what the user
// must fix, 1 when the server is not there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli.h"
#include "support/cli_run.h"

namespace pipescale::cli {
namespace {

using Output = testing::CliOutput;
using testing::RunCli;

const std::string kMark = std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/mark-classify.yaml";

std::vector<std::string> Profile(std::vector<std::string> more) {
  std::vector<std::string> args = {"profile",  "-f",        kMark,          "--task",
                                   "classify", "--variant", "inception-v3", "--hardware-class",
                                   "p2-xlarge"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(ProfileCommand, HelpNamesEveryFlag) {
  const Output r = RunCli({"profile", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* flag : {"--address", "--deployment", "--kubeconfig", "--batches", "--requests",
                           "--warmup", "--statistic", "--fit", "--model", "--input-shape",
                           "--timeout", "--progress", "--write", "kubectl port-forward"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_NE(RunCli({"help"}).out.find("pipescale profile -f FILE"), std::string::npos);
}

TEST(ProfileCommand, BadFlagsExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"profile"}, "-f FILE is required"},
      {Profile({}), "give exactly one of --address HOST:PORT or --deployment NAME"},
      {Profile({"--address", "a:1", "--deployment", "d"}), "give exactly one of"},
      {Profile({"--address", "a:1", "-n", "ns"}), "-n and --kubeconfig go with --deployment"},
      {Profile({"--address", "a:1", "--requests", "0"}), "--requests: needs an integer in [1, "},
      {Profile({"--address", "a:1", "--statistic", "p90"}),
       "--statistic must be mean, p50 or p99, got \"p90\""},
      {Profile({"--address", "a:1", "-o", "xml"}), "-o must be one of table, yaml, json"},
      {Profile({"--address", "a:1", "--input-shape", "3,x"}), "--input-shape needs positive"},
      {Profile({"--address", "a:1", "--frobnicate", "1"}), "unknown argument \"--frobnicate\""},
      {Profile({"--address"}), "--address needs a value"},
  };
  for (const auto& [args, message] : cases) {
    const Output r = RunCli(args);
    EXPECT_EQ(r.code, kExitInvalidInput) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

TEST(ProfileCommand, UnknownNamesAndInvalidPipelinesExitTwo) {
  Output r = RunCli({"profile", "-f", kMark, "--task", "clasify", "--variant", "v",
                     "--hardware-class", "cpu", "--address", "127.0.0.1:1"});
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_EQ(r.err,
            "pipescale profile: --task: unknown task \"clasify\"; the pipeline has: "
            "classify\n");
  r = RunCli(Profile({"--address", "127.0.0.1:1", "--batches", "1,32"}));
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_NE(r.err.find("batch size 32 is outside [1, 16]"), std::string::npos) << r.err;
  const std::string bad = ::testing::TempDir() + "/profile-invalid.yaml";
  std::ofstream(bad) << "apiVersion: pipescale.io/v1alpha1\nkind: InferencePipeline\n";
  r = RunCli({"profile", "-f", bad, "--task", "t", "--variant", "v", "--hardware-class", "c",
              "--address", "127.0.0.1:1"});
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_NE(r.err.find("invalid InferencePipeline"), std::string::npos) << r.err;
}

TEST(ProfileCommand, AFileThatCannotBeEditedIsRefusedBeforeMeasuring) {
  const std::string file = ::testing::TempDir() + "/profile-shared.yaml";
  std::ofstream(file) << R"(apiVersion: pipescale.io/v1alpha1
kind: InferencePipeline
metadata: {name: p}
spec:
  hardwareClasses: [{name: cpu}]
  tasks:
    - {name: a, next: [{task: b}], variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: &d {quadratic: {c: 5}}}]}]}
    - {name: b, variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: *d}]}]}
  paths: [{name: p, tasks: [a, b], sloMs: 100}]
)";
  const Output r = RunCli({"profile", "-f", file, "--task", "b", "--variant", "v",
                           "--hardware-class", "cpu", "--address", "127.0.0.1:1", "--write"});
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_NE(r.err.find("--write"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("shared through a YAML anchor or alias"), std::string::npos) << r.err;
}

TEST(ProfileCommand, NothingListeningExitsOne) {
  const Output r = RunCli(Profile({"--address", "127.0.0.1:1"}));
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.err.rfind("pipescale profile: nothing answers at 127.0.0.1:1", 0), 0u) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace pipescale::cli
