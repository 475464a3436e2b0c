// One `pipescale profile` run from end to end: where to measure (an address, or a Ready pod of
// a Deployment), the measuring, and the measured latencyMs written into the pipeline's file
// in place. I/O: the command line only parses flags and prints.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "profile/cluster.h"
#include "profile/job.h"
#include "profile/progress.h"
#include "profile/report.h"

namespace pipescale::profile {

struct Options {
  Target target;
  std::string address;             // HOST:PORT; or else
  ClusterTarget cluster;           // a Ready pod of cluster.deployment
  std::string model;               // the server's model name; "" for the task's
  std::vector<int64_t> row_shape;  // "" for the model metadata's
  int requests = 200;
  int warmup = 10;
  Statistic statistic = Statistic::kMean;
  FitModel fit = FitModel::kQuadratic;
  std::chrono::seconds timeout{60};
};

struct Endpoint {
  std::string address;
  std::string pod;                 // "" for Options::address
  std::vector<std::string> notes;  // on the pod: a server that batches, another class
};

// Options::address, or a Ready pod of the Deployment. A Deployment not found is named with
// the name the operator gives the variant's.
Result<Endpoint> FindEndpoint(const Options& options, const Job& job);

// The handshake (OipClient::Handshake), every size of job.batches, and the report with the
// latencyMs made of them. Errors name the address (and the size and request that failed).
Result<Report> MeasureEndpoint(const Options& options, const Job& job, const Endpoint& endpoint,
                               const std::function<void(const Progress&)>& progress);

// Before measuring: that WriteLatency can edit `file` for the job (a stand-in latency is
// written in memory) and replace it. kInvalid saying why not.
Status CheckWritable(const std::string& file, const Job& job, FitModel fit);

// Writes `latency` into `file` (SetProfileLatency) through a temporary file beside it that
// then takes its place, keeping its permissions.
Status WriteLatency(const std::string& file, const Target& target, const Latency& latency);

}  // namespace pipescale::profile
