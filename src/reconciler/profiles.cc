#include "reconciler/profiles.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/strings.h"

namespace pipescale::reconciler {
namespace {

using model::ProfileKey;

// The declared profile of `key`, with its variant; nulls when the spec has none (a series of a
// variant or class the spec no longer lists).
std::pair<const model::Variant*, const model::Profile*> Declared(const model::Pipeline& pipeline,
                                                                 const ProfileKey& key) {
  const model::Variant* v = pipeline.FindVariant(key.task, key.variant);
  if (v == nullptr) return {nullptr, nullptr};
  return {v, v->FindProfile(key.hardware_class)};
}

// The trusted points of one profile's timings, and their batch-weighted ratio to the declared
// profile: the ratio of the time the batches took to the time the profile says they take.
model::ObservedProfile Observe(const ProfileKey& key, const model::LatencyProfile& declared,
                               const std::map<int, model::BatchTiming>& by_rows, int min_batches) {
  model::ObservedProfile out{.key = key};
  double measured = 0, expected = 0;
  for (const auto& [rows, timing] : by_rows) {
    if (rows < 1 || timing.batches < min_batches || !(timing.mean_ms > 0) ||
        !std::isfinite(timing.mean_ms) || out.points.size() >= kMaxProfilePoints) {
      continue;
    }
    const double declared_ms = declared.Ms(rows);
    out.points.push_back({.batch = rows,
                          .measured_ms = timing.mean_ms,
                          .declared_ms = declared_ms,
                          .batches = timing.batches});
    measured += timing.batches * timing.mean_ms;
    expected += timing.batches * declared_ms;
  }
  if (expected > 0) out.ratio = measured / expected;
  return out;
}

// The correction to plan from for `observed`, given the one planned from before (or null).
model::ProfileCorrection Adopt(const model::ObservedProfile& observed,
                               const model::ProfileCorrection* before,
                               const std::string& fingerprint) {
  const double planned = before != nullptr ? before->ratio : 1;
  if (before != nullptr && std::abs(*observed.ratio / planned - 1) <= kProfileShift) return *before;
  if (before == nullptr && std::abs(*observed.ratio - 1) <= kProfileShift) {
    return {.key = observed.key, .ratio = 1, .points = {}, .declared = fingerprint};
  }
  model::ProfileCorrection out{
      .key = observed.key, .ratio = *observed.ratio, .points = {}, .declared = fingerprint};
  for (const model::ProfilePoint& p : observed.points)
    out.points.push_back({p.batch, p.measured_ms});
  return out;
}

const model::ProfileCorrection* Find(const std::vector<model::ProfileCorrection>& corrections,
                                     const ProfileKey& key, const std::string& fingerprint) {
  for (const model::ProfileCorrection& c : corrections) {
    if (c.key == key && c.declared == fingerprint) return &c;
  }
  return nullptr;
}

}  // namespace

std::string ProfileFingerprint(const model::LatencyProfile& profile) {
  std::string text = profile.kind == model::LatencyProfile::Kind::kTable ? "table:" : "quadratic:";
  text += StrFormat("%.17g,%.17g,%.17g;", profile.quadratic.a, profile.quadratic.b,
                    profile.quadratic.c);
  for (const model::LatencyPoint& p : profile.points) text += StrFormat("%d:%.17g,", p.batch, p.ms);
  return Fingerprint(text);
}

std::string ProfileName(const ProfileKey& key) {
  return key.task + "/" + key.variant + " on " + key.hardware_class;
}

ProfileStep StepProfiles(const model::Pipeline& pipeline,
                         const std::vector<model::ProfileCorrection>& before,
                         const model::BatchTimings& timings) {
  ProfileStep step;
  const model::ProfilesSpec& spec = pipeline.spec.profiles;
  if (spec.learn == model::ProfileLearning::kOff) return step;
  const bool plan = spec.learn == model::ProfileLearning::kPlan;
  std::map<ProfileKey, std::string> fingerprints;
  for (const auto& [key, by_rows] : timings) {
    const auto [variant, declared] = Declared(pipeline, key);
    if (declared == nullptr) continue;
    model::ObservedProfile observed = Observe(key, declared->latency, by_rows, spec.min_batches);
    if (!observed.ratio) continue;
    if (std::abs(*observed.ratio - 1) > spec.tolerance) step.drifted.push_back(key);
    const std::string fingerprint = ProfileFingerprint(declared->latency);
    fingerprints[key] = fingerprint;
    if (plan) {
      model::ProfileCorrection c = Adopt(observed, Find(before, key, fingerprint), fingerprint);
      observed.planned_ratio = c.ratio;
      if (c.ratio != 1 || !c.points.empty()) step.corrections.push_back(std::move(c));
    }
    step.observed.push_back(std::move(observed));
  }
  if (!plan) return step;
  // Unmeasured now (no load in the window): what was learned stays, for the profile it was
  // learned against.
  for (const model::ProfileCorrection& c : before) {
    if (fingerprints.contains(c.key)) continue;
    const auto [variant, declared] = Declared(pipeline, c.key);
    if (declared != nullptr && ProfileFingerprint(declared->latency) == c.declared) {
      step.corrections.push_back(c);
    }
  }
  std::sort(step.corrections.begin(), step.corrections.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  return step;
}

model::LatencyProfile Corrected(const model::LatencyProfile& declared,
                                const model::ProfileCorrection& correction, int max_batch) {
  model::LatencyProfile out{.kind = model::LatencyProfile::Kind::kTable};
  const int largest = std::max(1, declared.MaxBatch(max_batch));
  std::map<int, double> measured;
  for (const model::LatencyPoint& p : correction.points) measured[p.batch] = p.ms;
  double floor = 0;
  for (int b = 1; b <= largest; ++b) {
    const auto it = measured.find(b);
    const double ms = it != measured.end() ? it->second : declared.Ms(b) * correction.ratio;
    floor = std::max(floor, ms);
    out.points.push_back({b, floor});
  }
  return out;
}

void UseCorrections(model::Pipeline& pipeline,
                    const std::vector<model::ProfileCorrection>& corrections) {
  for (const model::ProfileCorrection& c : corrections) {
    const int ti = pipeline.TaskIndex(c.key.task);
    if (ti < 0) continue;
    for (model::Variant& v : pipeline.spec.tasks[ti].variants) {
      if (v.name != c.key.variant) continue;
      for (model::Profile& p : v.profiles) {
        if (p.hardware_class == c.key.hardware_class &&
            ProfileFingerprint(p.latency) == c.declared) {
          p.latency = Corrected(p.latency, c, v.max_batch);
        }
      }
    }
  }
}

ProfileVerdict JudgeProfiles(const model::Pipeline& pipeline, const ProfileStep& step) {
  ProfileVerdict v{
      .known = !step.observed.empty(), .accurate = step.drifted.empty(), .message = ""};
  const double tolerance = pipeline.spec.profiles.tolerance;
  if (!v.known) {
    v.message = StrFormat("no batch size has served %d batches within the window yet",
                          pipeline.spec.profiles.min_batches);
    return v;
  }
  if (v.accurate) {
    v.message = StrFormat("%zu measured profiles within %.0f%% of the declared ones",
                          step.observed.size(), 100 * tolerance);
    return v;
  }
  for (const model::ObservedProfile& o : step.observed) {
    if (std::find(step.drifted.begin(), step.drifted.end(), o.key) == step.drifted.end()) continue;
    const model::ProfilePoint& p = o.points.front();
    v.message += StrFormat("%s%s runs %.2fx its declared profile (b=%d: %.1f ms, declared %.1f)",
                           v.message.empty() ? "" : "; ", ProfileName(o.key).c_str(), *o.ratio,
                           p.batch, p.measured_ms, p.declared_ms);
  }
  v.message += pipeline.spec.profiles.learn == model::ProfileLearning::kPlan
                   ? "; planning from the measured profiles"
                   : "; spec.profiles.learn: Plan would plan from them";
  return v;
}

}  // namespace pipescale::reconciler
