#include "profile/measure.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace pipescale::profile {
namespace {

using Clock = std::chrono::steady_clock;

struct Samples {
  std::vector<double> ms;
  double queue_sum_ms = 0;
  int queue_reported = 0;
};

// The requests at one batch size; the samples of the measured ones.
Result<Samples> MeasureSize(OipClient& client, const MeasureOptions& options, Progress& at,
                            Clock::time_point start,
                            const std::function<void(const Progress&)>& progress) {
  const std::string body = InferBody(options.inputs, at.batch);
  Samples out;
  for (at.done = 0; at.done < at.total;) {
    auto timed = client.Infer(body);
    const int number = at.done + 1;
    if (!timed) {
      return Error{timed.error().kind,
                   client.address() + " failed at batch size " + std::to_string(at.batch) +
                       ", request " + std::to_string(number) + " of " + std::to_string(at.total) +
                       (number <= options.warmup ? " (warm-up)" : "") + ": " +
                       timed.error().message};
    }
    ++at.done;
    at.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (number > options.warmup) {
      const double queue_ms = timed->answer.queue_ms.value_or(0);
      out.ms.push_back(std::max(0.0, timed->round_trip_ms - queue_ms));
      out.queue_sum_ms += queue_ms;
      out.queue_reported += timed->answer.queue_ms ? 1 : 0;
    }
    if (at.done < at.total) progress(at);
  }
  return out;
}

}  // namespace

Result<std::vector<MeasuredBatch>> Measure(OipClient& client, const MeasureOptions& options,
                                           const std::function<void(const Progress&)>& progress) {
  const Clock::time_point start = Clock::now();
  std::vector<MeasuredBatch> out;
  Progress at{.sizes = options.batches.size(), .total = options.warmup + options.requests};
  for (size_t i = 0; i < options.batches.size(); ++i) {
    at.size_index = i;
    at.batch = options.batches[i];
    auto samples = MeasureSize(client, options, at, start, progress);
    if (!samples) return samples.error();
    const int n = static_cast<int>(samples->ms.size());
    out.push_back({.batch = at.batch,
                   .summary = Summarize(samples->ms),
                   .queue_ms = n > 0 ? samples->queue_sum_ms / n : 0,
                   .queue_reported = samples->queue_reported});
    Progress done = at;
    done.finished = &out.back();
    progress(done);
  }
  return out;
}

}  // namespace pipescale::profile
