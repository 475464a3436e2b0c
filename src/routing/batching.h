// Batches formed in the router, as FA2's design assumes: a task's requests wait in one queue
// until the plan's batch size is reached or the first has waited its budget, then go to a pod
// as one Open Inference Protocol request whose inputs are stacked along the first dimension;
// the answer's outputs are cut back into each request's rows. Pure: time is passed in.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace pipescale::routing {

// When a task's batch goes out: full at `batch_size` rows, or when its first request has waited
// `wait_ms`.
class BatchFormer {
 public:
  BatchFormer(int batch_size, double wait_ms) { Reconfigure(batch_size, wait_ms); }
  void Reconfigure(int batch_size, double wait_ms);

  // A request of `rows` rows joins at `now_ms`.
  void Add(std::uint64_t id, int rows, double now_ms);
  // The requests to send now as one batch, in arrival order: as many of the first as fit in the
  // batch size (at least one) once that many rows wait, or once the first has waited its
  // budget; empty when no batch is ready.
  std::vector<std::uint64_t> Take(double now_ms);
  // When the first waiting request's budget ends (ms); infinity when none waits.
  double DueMs() const;
  // A request that gave up; false when it no longer waits.
  bool Remove(std::uint64_t id);
  size_t waiting() const { return queue_.size(); }

 private:
  struct Waiting {
    std::uint64_t id;
    int rows;
    double since_ms;
  };
  int batch_size_ = 1;
  double wait_ms_ = 0;
  int rows_ = 0;  // waiting, in all
  std::deque<Waiting> queue_;
};

// What a request's inputs must share with the others of its batch: each input's name,
// datatype and dimensions past the first, in order; and its rows (the first dimension, the
// same for every input). kInvalid when an input has no shape or its inputs disagree on rows.
struct BatchKey {
  std::string signature;
  int rows = 0;
};
Result<BatchKey> KeyOf(std::string_view inputs);

// One request's "inputs" array for the batch: the requests' inputs (each an "inputs" array of
// the same signature) stacked along the first dimension, in order.
Result<std::string> StackInputs(const std::vector<std::string_view>& inputs);

// The answer's "outputs" array cut into each request's: an output whose first dimension is
// the batch's rows is sliced by `rows` (its data flat in row-major order, or one element per
// row); any other output goes to every request whole. kInvalid when an output cannot be read.
Result<std::vector<std::string>> SplitOutputs(std::string_view outputs,
                                              const std::vector<int>& rows);

}  // namespace pipescale::routing
