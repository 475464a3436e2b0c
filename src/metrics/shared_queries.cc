#include "metrics/shared_queries.h"

#include <cstdio>

namespace pipescale::metrics {

template <class T, class Ask>
Result<std::vector<T>> SharedQueries::Shared(Answers<T>& answers, const std::string& key,
                                             const std::string& range, const Ask& ask,
                                             const std::string& namespace_name,
                                             const std::string& name,
                                             std::chrono::milliseconds max_age) {
  std::shared_ptr<Answer<T>> answer;
  {
    std::lock_guard lock(mu_);
    std::shared_ptr<Answer<T>>& slot = answers[key];
    if (!slot) slot = std::make_shared<Answer<T>>();
    answer = slot;
  }
  using ByPipeline = std::map<Pipeline, std::vector<T>>;
  std::shared_ptr<const Result<ByPipeline>> series;
  {
    std::lock_guard fetching(answer->fetching);
    const auto now = std::chrono::steady_clock::now();
    if (!answer->series || now - answer->at >= max_age || answer->range != range) {
      ++sent_;
      Result<std::vector<T>> got = ask();
      if (got) {
        ByPipeline grouped;
        for (T& s : *got) {
          grouped[{LabelOf(s, "namespace"), LabelOf(s, "pipeline")}].push_back(std::move(s));
        }
        answer->series = std::make_shared<const Result<ByPipeline>>(std::move(grouped));
      } else {
        answer->series = std::make_shared<const Result<ByPipeline>>(got.error());
      }
      answer->at = now;
      answer->range = range;
    }
    series = answer->series;
  }
  if (!series->ok()) return series->error();
  const auto mine = (*series)->find({namespace_name, name});
  if (mine == (*series)->end()) return std::vector<T>{};
  return mine->second;
}

Result<std::vector<Sample>> SharedQueries::Read(const PrometheusClient& prometheus,
                                                const std::string& query,
                                                const std::string& namespace_name,
                                                const std::string& name,
                                                std::optional<std::chrono::milliseconds> max_age) {
  return Shared(
      instant_, prometheus.base_url() + "\n" + query, "", [&] { return prometheus.Query(query); },
      namespace_name, name, max_age.value_or(max_age_));
}

Result<std::vector<Series>> SharedQueries::ReadRange(const PrometheusClient& prometheus,
                                                     const std::string& query, double start,
                                                     double end, double step,
                                                     const std::string& namespace_name,
                                                     const std::string& name) {
  char shape[64], range[64];
  std::snprintf(shape, sizeof shape, "\n%.3f,%.3f", step, end - start);
  std::snprintf(range, sizeof range, "%.3f,%.3f", start, end);
  return Shared(
      ranges_, prometheus.base_url() + "\n" + query + shape, range,
      [&] { return prometheus.QueryRange(query, start, end, step); }, namespace_name, name,
      max_age_);
}

}  // namespace pipescale::metrics
