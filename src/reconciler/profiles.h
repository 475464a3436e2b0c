// The variants' latency profiles as the router measures them (spec.profiles): each measured batch
// size beside the declared d(b), the drift between them, and with learn: Plan the corrected
// profile the optimizers plan from, remembered in the status like the load's other memory.
#pragma once

#include <string>
#include <vector>

#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "model/status.h"

namespace pipescale::reconciler {

// Planning moves to a new measurement when its ratio to the declared profile differs from the
// ratio planned from by more than this share: a mean over 30 batches or more moves by a few
// percent between windows, and each move would re-plan.
inline constexpr double kProfileShift = 0.05;
// Measured batch sizes kept per profile in the status: the status stays bounded whatever the
// router reports.
inline constexpr size_t kMaxProfilePoints = 64;

struct ProfileStep {
  std::vector<model::ObservedProfile> observed;       // status.observed.profiles
  std::vector<model::ProfileCorrection> corrections;  // planned from, and remembered
  std::vector<model::ProfileKey> drifted;             // measured beyond spec.profiles.tolerance
};

// One decision's profiles: the measured points trusted (spec.profiles.minBatches batches or more)
// beside the declared ones, and with learn: Plan the corrections to plan from. A correction moves
// once the measurement is kProfileShift away from it, is kept while nothing is measured (no load
// is not a reason to forget what was learned), and is forgotten when the spec declares another
// profile for the variant or stops learning.
ProfileStep StepProfiles(const model::Pipeline& pipeline,
                         const std::vector<model::ProfileCorrection>& before,
                         const model::BatchTimings& timings);

// `declared` corrected: the measured points where there are any, the declared curve times the
// ratio elsewhere, as a table over 1..declared.MaxBatch(max_batch) that never falls as the batch
// grows (a measured point below the scaled curve would otherwise make a larger batch cheaper).
model::LatencyProfile Corrected(const model::LatencyProfile& declared,
                                const model::ProfileCorrection& correction, int max_batch);

// The pipeline's profiles with `corrections` applied where they fit (same declared profile).
void UseCorrections(model::Pipeline& pipeline,
                    const std::vector<model::ProfileCorrection>& corrections);

// A fingerprint of a declared profile, to tell when the spec changed it.
std::string ProfileFingerprint(const model::LatencyProfile& profile);

// "detect/yolo on gpu" for messages.
std::string ProfileName(const model::ProfileKey& key);

// The ProfileAccurate condition's status, reason and message for `step` (learn not Off).
struct ProfileVerdict {
  bool known = false;     // some profile has a trusted measurement
  bool accurate = false;  // every measured one within tolerance
  std::string message;
};
ProfileVerdict JudgeProfiles(const model::Pipeline& pipeline, const ProfileStep& step);

}  // namespace pipescale::reconciler
