// Status conditions in the metav1.Condition shape, and the reasons the operator uses.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/status.h"

namespace pipescale::reconciler {

namespace reason {
inline constexpr const char* kReconciled = "Reconciled";
inline constexpr const char* kInvalidSpec = "InvalidSpec";
inline constexpr const char* kMetricsUnavailable = "MetricsUnavailable";
inline constexpr const char* kSeriesMissing = "SeriesMissing";
inline constexpr const char* kMetricsRead = "MetricsRead";
inline constexpr const char* kApplied = "Applied";
inline constexpr const char* kRecommendMode = "RecommendMode";
inline constexpr const char* kHeld = "PlanHeld";
inline constexpr const char* kOptimal = "Optimal";
inline constexpr const char* kFeasible = "Feasible";
inline constexpr const char* kInfeasible = "Infeasible";
inline constexpr const char* kOverloaded = "Overloaded";
inline constexpr const char* kOverBudget = "OverBudget";
inline constexpr const char* kScaleInFirst = "ScaleInFirst";
// PlanApplied's, and an event's: pods of the plan wait because no node has room for them.
inline constexpr const char* kUnschedulable = "Unschedulable";
// PlanApplied's, and an event's: the API server refuses a Deployment's pods (its ReplicaFailure
// condition: a spec.priorityClassName the cluster has no PriorityClass of, a quota).
inline constexpr const char* kPodsRefused = "PodsRefused";
// PlanApplied's: a batch change waits (for a rollout to finish, for the scale-in the
// scale-down window holds back, or for room for surge pods).
inline constexpr const char* kBatchHeld = "BatchHeld";
// Yielded's, and an event's: a class has no room left for the pipeline and pods of a higher
// priority run on its nodes (spec.priorityClassName).
inline constexpr const char* kHigherPriority = "HigherPriority";
// Yielded's, and an event's: pipelines contend for a class's nodes and the arbiter holds this
// one to its share of them (reconciler/arbiter.h).
inline constexpr const char* kFairShare = "FairShare";
// An event's: a field the operator manages was changed outside it and has been set back.
inline constexpr const char* kChangeReverted = "ChangeReverted";
// An event's: the router's measured query sizes moved past kMixShift; Kairos plans for them.
inline constexpr const char* kQuerySizesShifted = "QuerySizesShifted";
// ProfileAccurate's: a measured profile differs from the declared one by more than
// spec.profiles.tolerance (also a Warning event); every measured one is within it; nothing is
// measured yet.
inline constexpr const char* kDrift = "Drift";
inline constexpr const char* kMeasured = "Measured";
inline constexpr const char* kNotMeasured = "NotMeasured";
// A Warning event's: a profile starts to drift.
inline constexpr const char* kProfileDrift = "ProfileDrift";
// An event's: the plan starts from other measured profiles (spec.profiles.learn: Plan).
inline constexpr const char* kProfileCorrected = "ProfileCorrected";
// Idle's (spec.scaleToZero): every path sleeps; some do; none does. Sleeping and Woken are also
// the events of paths falling asleep and waking.
inline constexpr const char* kNoRequests = "NoRequests";
inline constexpr const char* kSleeping = "Sleeping";
inline constexpr const char* kServing = "Serving";
inline constexpr const char* kWoken = "Woken";
inline constexpr const char* kAwakeAhead = "AwakeAhead";
inline constexpr const char* kWokenAhead = "WokenAhead";
inline constexpr const char* kForecastMissed = "ForecastMissed";
}  // namespace reason

// Sets condition `type` in `conditions`. lastTransitionTime changes only when the status flips,
// so a steady state rewrites nothing.
void SetCondition(std::vector<model::Condition>& conditions, const std::string& type, bool status,
                  const std::string& reason, const std::string& message, long generation,
                  double now);

// The same with `value` "True", "False" or "Unknown".
void SetConditionValue(std::vector<model::Condition>& conditions, const std::string& type,
                       const std::string& value, const std::string& reason,
                       const std::string& message, long generation, double now);

// Drops condition `type` (a feature turned off).
void RemoveCondition(std::vector<model::Condition>& conditions, const std::string& type);

// The condition's status ("True", "False", "Unknown") or "" when absent.
std::string ConditionStatus(const std::vector<model::Condition>& conditions,
                            const std::string& type);
// The same of status.conditions as read from the cluster (api::ReadConditions reads them).
std::string ConditionStatus(const nlohmann::json& conditions, const std::string& type);

}  // namespace pipescale::reconciler
