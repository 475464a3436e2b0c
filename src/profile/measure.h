// The measuring loop of `pipescale profile`: at each batch size, warm-up requests and then N
// requests of b rows, one at a time, each timed by its round trip less the queueing the server
// reports. I/O: it drives an OipClient.
#pragma once

#include <functional>
#include <vector>

#include "common/result.h"
#include "profile/oip_client.h"
#include "profile/points.h"
#include "profile/progress.h"

namespace pipescale::profile {

struct MeasureOptions {
  std::vector<int> batches;
  int requests = 200;  // measured per batch size
  int warmup = 10;     // sent first at each size, not measured
  std::vector<InputTensor> inputs;
};

// One MeasuredBatch per batch size, in order. `progress` hears of every answer. The error of
// the first request that fails names the address, the batch size and the request, e.g.
// "127.0.0.1:8080 failed at batch size 4, request 17 of 210: POST /v2/models/m/infer: Recv
// failure: Connection reset by peer", with the client's error kind.
Result<std::vector<MeasuredBatch>> Measure(OipClient& client, const MeasureOptions& options,
                                           const std::function<void(const Progress&)>& progress);

}  // namespace pipescale::profile
