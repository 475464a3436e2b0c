// The deployment a platform engineer runs without pipescale, stated once for every baseline (the
// operator's `hpa`, the gym's HPA, KEDA and KPA, their tuned settings): per task its most
// accurate variant, on the class that serves a request cheapest while meeting the task's share
// of its SLO, behind the model server's dynamic batcher and a bounded queue, with a floor of
// replicas for spec.minRate. What the autoscalers then do with it is theirs.
#pragma once

#include <string>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::optimizer {

// The knobs a user of HPA, KEDA or KPA turns: `pipescale simulate --tune` sweeps them.
struct BaselineKnobs {
  // The share of a replica's throughput (at full batches) it is scaled to carry: HPA's
  // averageUtilization, KEDA's threshold over the replica's rate, KPA's target utilisation.
  double target = 0.7;
  int max_batch = 0;            // the server's max batch for every task; 0: each task's largest fit
  std::string hardware_class;   // where a task's variant profiles it; "": the cheapest that fits
  double call_overhead_ms = 0;  // per call beyond d(b), as a replica's load test measures it
};

// Triton's dynamic batcher waits at most this long for a fuller batch (its examples' 100 us to a
// few ms; a pod's queue already fills batches under load).
inline constexpr double kBaselineQueueDelayMs = 5;

struct BaselineTask {
  int variant = 0;              // the task's most accurate
  int hw_class = 0;             // index into spec.hardware_classes
  int batch = 1;                // the server's max batch (requests)
  double share_ms = 0;          // the task's share of the tightest SLO through it
  double batch_ms = 0;          // a full batch's service, overhead included
  double queue_timeout_ms = 0;  // a request not in a batch by then is rejected (Triton's
                                // queue policy, REJECT): it could no longer finish in its share
  double replica_rps = 0;       // what one replica serves at full batches
  int min_replicas = 1;         // spec.minRate's load (the floor workload) at the target
  int max_replicas = 1;         // the class's maxReplicas, else kMaxReplicas
};

// Per task (spec order). `floor` is the load to be ready for before any is measured (the
// spec.minRate workload; empty: none). A task's SLO share is each path's SLO split over its tasks
// by their fastest d(1), the tightest over the paths through it (the spec's SLO where no path
// names one). Its batch on a class is the knob's (within the variant's max batch), else the
// largest whose service twice over fits the share: a request that just missed a batch waits for
// it, then rides the next. Its class is the one of lowest price per request served among those
// where that batch fits, the first listed on ties; else the fastest.
std::vector<BaselineTask> DeployBaseline(const model::Pipeline& pipeline,
                                         const model::Workload& floor, const BaselineKnobs& knobs);

// A batch of `batch` requests' service on `latency`, over the spec's query-size mix (a request
// of q rows counts q rows), without the call's overhead.
double BatchMs(const model::PipelineSpec& spec, const model::LatencyProfile& latency, int batch);

}  // namespace pipescale::optimizer
