// The latency a request sees at one task at the percentile its SLO names (p99 by default): the
// wait for its batch to fill, the wait behind other batches, and the batch's execution. The
// papers plan for means; random arrivals queue past a mean-value plan (issue 24).
#pragma once

#include <vector>

#include "model/pipeline.h"

namespace pipescale::optimizer {

// Where a task's batches form: in the router, one queue for all replicas with a wait budget
// (batchSize.formedBy: router); or in each model server, with the server's own wait (unknown to
// the plan).
enum class BatchFormation { kRouter, kServer };

struct TaskLoad {
  double rate_rps = 0;  // requests per second into the task
  int replicas = 1;
  int batch = 1;
  double exec_ms = 0;      // d(b)
  double exec_one_ms = 0;  // d(1): a batch the router sends out partial runs shorter
  BatchFormation formation = BatchFormation::kServer;
  // The squared coefficient of variation of a batch's service time: 0 for batches of one size
  // (d(b) is fixed); a pool serving queries of mixed sizes one at a time has more.
  double service_cv2 = 0;
  // The index of dispersion of the task's per-second arrival counts (routing/dispersion.h): 1
  // for Poisson arrivals; a batch of b rows then arrives with b times less variation.
  double arrival_dispersion = 1;
};

// `rate_rps` into `replicas` replicas of a variant at a batch on the class `profile` is for.
TaskLoad LoadOf(const model::Variant& variant, const model::Profile& profile, int batch,
                double rate_rps, int replicas);

struct TailLatency {
  double fill_ms = 0;   // waiting for the batch to fill, at the percentile
  double queue_ms = 0;  // waiting behind other batches, at the percentile
  double exec_ms = 0;
  // The router's wait budget for a batch: the mean time it takes to fill, (b - 1) / lambda.
  // Under router formation no request waits longer; a batch that is short at its end goes out
  // partial (and faster).
  double wait_budget_ms = 0;

  double TotalMs() const { return fill_ms + queue_ms + exec_ms; }
};

// The percentile `percentile` (0 < percentile <= 100; past 99.99 it plans for the 99.99th, as a
// plan for the 100th would be infinite) of a request's time at the task, bounded
// above as follows (tests/unit/optimizer/tail_test.cc checks the bound against a simulation):
//  - fill: Erlang(b - 1) arrivals at the task's rate (the router fills one batch at a time, in
//    its queue or at the server whose batch is fullest), capped at the router's wait budget
//    when it forms the batches (a server's own wait is not known: not capped);
//  - queue: the batches (arriving Erlang-b, served in d(b) each, or, for the router's partial
//    batches, on the chord from d(1) to d(b), above a convex d at the mean rows) queue as in an
//    M/G/c queue (Allen-Cunneen's mean with the arrivals' variation, load.arrival_dispersion / b,
//    and load.service_cv2's; an exponential tail behind Erlang C's chance of waiting): the
//    router joins each to the shortest queue (routing/picker.h). The wait is rounded up to whole
//    batches: a request waits at the replica it joined, behind the batch in service there, while
//    another may free up first;
//  - exec: d(b).
// An infinite total when the replicas are at or past saturation (utilisation >= 1).
TailLatency TaskTailLatency(const TaskLoad& load, double percentile);

// TaskTailLatency at replica counts max(1, load.replicas), then one more at each Next: a step of
// Erlang B's recurrence and one quantile each, so a caller that stops early pays only for the
// counts it read.
class TailSeries {
 public:
  TailSeries(const TaskLoad& load, double percentile);
  int replicas() const { return first_ + steps_; }  // the count Next returns
  TailLatency Next();

 private:
  double p_;
  int first_;
  int steps_ = 0;
  bool idle_;
  double variation_ = 0;  // Allen-Cunneen's: the batches' arrivals' and service's squared CVs
  TailLatency common_;
  double rows_ = 1, mean_exec_ms_ = 0, batch_rate_ = 0, offered_ = 0;
  double erlang_b_ = 1;
};

// TaskTailLatency at every replica count from load.replicas to `last`, in that order (empty when
// last < load.replicas), in time linear in `last`.
std::vector<TailLatency> TaskTailLatencies(const TaskLoad& load, int last, double percentile);

// The fewest replicas from load.replicas on whose wait behind other batches at the percentile is
// at most `max_queue_ms`. The search stops at 64 or twice as many more, and at `max_replicas`,
// and returns where it stopped when none fits (load.replicas when that is past max_replicas).
int FewestReplicasWithin(const TaskLoad& load, double max_queue_ms, int max_replicas,
                         double percentile);

// The share of the full throughput of load.replicas replicas (load.batch rows every
// load.exec_ms each) that they carry with their wait behind other batches at the percentile at
// most `max_queue_ms` (load.rate_rps is ignored); in [0, 1].
double UsableShare(TaskLoad load, double max_queue_ms, double percentile);

// The share of each replica's full throughput that the replicas load.rate_rps needs carry with
// their wait behind other batches at the percentile within `max_queue_ms`: from the fewest that
// carry the rate at full throughput, replicas are added (up to `max_replicas`) until the wait
// fits, and the share is taken at that count (fewer replicas pool less and carry less each).
// 1 when a batch takes no measurable time or the fewest are more than `max_replicas`: the
// replica bound decides then.
double ShareAtLoad(TaskLoad load, double max_queue_ms, int max_replicas, double percentile);

// The p-quantile (0 < p < 1) of the Erlang(k, rate) distribution (the time for k arrivals of a
// Poisson process of `rate` per second), in milliseconds; 0 for k <= 0.
double ErlangQuantileMs(int k, double rate_rps, double p);

// Erlang C: the chance that an arrival waits in an M/M/c queue with `servers` servers and
// `offered` Erlangs of load; 1 at or past saturation.
double ErlangC(int servers, double offered);

}  // namespace pipescale::optimizer
