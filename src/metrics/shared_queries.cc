#include "metrics/shared_queries.h"

namespace pipescale::metrics {
namespace {

std::string Label(const Sample& s, const char* name) {
  const auto it = s.labels.find(name);
  return it != s.labels.end() ? it->second : "";
}

}  // namespace

std::shared_ptr<SharedQueries::Answer> SharedQueries::Slot(const std::string& key) {
  std::lock_guard lock(mu_);
  std::shared_ptr<Answer>& slot = answers_[key];
  if (!slot) slot = std::make_shared<Answer>();
  return slot;
}

Result<std::vector<Sample>> SharedQueries::Read(const PrometheusClient& prometheus,
                                                const std::string& query,
                                                const std::string& namespace_name,
                                                const std::string& name) {
  const std::shared_ptr<Answer> answer = Slot(prometheus.base_url() + "\n" + query);
  std::shared_ptr<const Result<ByPipeline>> series;
  {
    std::lock_guard fetching(answer->fetching);
    const auto now = std::chrono::steady_clock::now();
    if (!answer->series || now - answer->at >= max_age_) {
      ++sent_;
      auto samples = prometheus.Query(query);
      if (samples) {
        ByPipeline grouped;
        for (Sample& s : *samples) {
          grouped[{Label(s, "namespace"), Label(s, "pipeline")}].push_back(std::move(s));
        }
        answer->series = std::make_shared<const Result<ByPipeline>>(std::move(grouped));
      } else {
        answer->series = std::make_shared<const Result<ByPipeline>>(samples.error());
      }
      answer->at = now;
    }
    series = answer->series;
  }
  if (!series->ok()) return series->error();
  const auto mine = (*series)->find({namespace_name, name});
  if (mine == (*series)->end()) return std::vector<Sample>{};
  return mine->second;
}

}  // namespace pipescale::metrics
