#include "profile/job.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "api/deployment.h"
#include "common/strings.h"

namespace pipescale::profile {
namespace {

Error Invalid(std::string message) { return Error{ErrorKind::kInvalid, std::move(message)}; }

template <typename T, typename Name>
std::string Names(const std::vector<T>& items, Name name) {
  std::string out;
  for (const T& item : items) out += (out.empty() ? "" : ", ") + name(item);
  return out;
}

// Each size of a comma-separated list; kInvalid for one that is not an integer in range.
Result<std::vector<int>> ParseList(std::string_view spec, int max_batch) {
  std::set<int> sizes;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, comma - start);
    int size = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), size);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return Invalid("--batches: " + QuoteUserText(item) +
                     " is not a batch size; give all, pow2 or sizes like 1,2,4");
    }
    if (size < 1 || size > max_batch) {
      return Invalid("--batches: batch size " + std::to_string(size) + " is outside [1, " +
                     std::to_string(max_batch) + "] (the variant's batchSize.max)");
    }
    sizes.insert(size);
    start = comma + 1;
  }
  return std::vector<int>(sizes.begin(), sizes.end());
}

}  // namespace

Result<std::vector<int>> ParseBatches(std::string_view spec, int max_batch) {
  std::vector<int> sizes;
  if (spec == "all") {
    for (int b = 1; b <= max_batch; ++b) sizes.push_back(b);
  } else if (spec == "pow2") {
    for (int b = 1; b < max_batch; b *= 2) sizes.push_back(b);
    sizes.push_back(max_batch);
  } else {
    return ParseList(spec, max_batch);
  }
  return sizes;
}

Result<Job> ResolveJob(const model::Pipeline& pipeline, const Target& target,
                       std::string_view batches) {
  const auto& spec = pipeline.spec;
  const int t = pipeline.TaskIndex(target.task);
  if (t < 0) {
    return Invalid("--task: unknown task " + QuoteUserText(target.task) + "; the pipeline has: " +
                   Names(spec.tasks, [](const model::Task& x) { return x.name; }));
  }
  const model::Task& task = spec.tasks[t];
  const model::Variant* variant = task.FindVariant(target.variant);
  if (variant == nullptr) {
    return Invalid("--variant: unknown variant " + QuoteUserText(target.variant) + " of task " +
                   QuoteUserText(task.name) + "; it has: " +
                   Names(task.variants, [](const model::Variant& x) { return x.name; }));
  }
  if (pipeline.HardwareClassIndex(target.hardware_class) < 0) {
    return Invalid(
        "--hardware-class: unknown hardware class " + QuoteUserText(target.hardware_class) +
        "; spec.hardwareClasses has: " +
        Names(spec.hardware_classes, [](const model::HardwareClass& x) { return x.name; }));
  }
  auto sizes = ParseBatches(batches, variant->max_batch);
  if (!sizes) return sizes.error();
  return Job{
      .target = target,
      .max_batch = variant->max_batch,
      .batch_env = variant->batch_env,
      .batches = std::move(*sizes),
      .has_profile = variant->FindProfile(target.hardware_class) != nullptr,
      .deployment_name = api::DeploymentName(pipeline, task, *variant, target.hardware_class)};
}

}  // namespace pipescale::profile
