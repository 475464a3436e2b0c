#include "routing/batch_sample.h"

#include "routing/body.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;

// The batch rows an answer reports: 0 when it reports none a batch can have (absent, not a whole
// number, not above 0), so the rows sent may stand; -1 past kMaxBatchRows, never recorded.
int ReportedRows(const json& parameters) {
  const auto rows = parameters.find(kBatchRowsParameter);
  if (rows == parameters.end() || !rows->is_number_integer() || *rows <= 0) return 0;
  return *rows > kMaxBatchRows ? -1 : rows->get<int>();
}

}  // namespace

std::optional<BatchSample> BatchServiceSample(const CallFacts& call, double seconds,
                                              const json& parameters) {
  if (call.hardware_class.empty()) return std::nullopt;  // a profile is per class
  int rows = ReportedRows(parameters);
  if (rows == 0 && !call.pod_batches) rows = call.rows;
  // A server batch of unknown size says nothing about d(b); nor does a batch past any spec's.
  if (rows <= 0 || rows > kMaxBatchRows) return std::nullopt;
  const auto queued = parameters.find(kQueueParameter);
  if (queued != parameters.end() && queued->is_number() && *queued >= 0) {
    const double queue = queued->get<double>() / 1000;
    // The queue lies within the call: one longer is a broken clock, no service time.
    if (queue > seconds) return std::nullopt;
    return BatchSample{rows, seconds - queue};
  }
  // No queue time: only a call that cannot have queued at its server is all service.
  if (call.pod_batches || !call.pod_was_idle) return std::nullopt;
  return BatchSample{rows, seconds};
}

}  // namespace pipescale::routing
