// What one `pipescale profile` run measures: a variant of a task on a hardware class of a
// validated pipeline, at a list of batch sizes. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/pipeline.h"

namespace pipescale::profile {

struct Target {
  std::string task;
  std::string variant;
  std::string hardware_class;
};

struct Job {
  Target target;
  int max_batch = 1;            // the variant's batchSize.max
  std::string batch_env;        // the variant's batchSize.env; "" when the router batches
  std::vector<int> batches;     // ascending, each in [1, max_batch]
  bool has_profile = false;     // the variant has a profile for the class (else one is added)
  std::string deployment_name;  // the operator's name for the variant's Deployment on the class
};

// The job for `target` in `pipeline` at the batch sizes `batches` names (ParseBatches).
// kInvalid naming the flag, e.g. `--task: unknown task "clasify"; the pipeline has: detect,
// classify`.
Result<Job> ResolveJob(const model::Pipeline& pipeline, const Target& target,
                       std::string_view batches);

// "all": every size from 1 to max_batch (each size an optimizer may plan); "pow2": 1, 2, 4, ...
// and max_batch; or a comma-separated list of sizes in [1, max_batch]. Ascending, no repeats.
Result<std::vector<int>> ParseBatches(std::string_view spec, int max_batch);

}  // namespace pipescale::profile
