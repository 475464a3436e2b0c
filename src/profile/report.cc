#include "profile/report.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace pipescale::profile {
namespace {

using nlohmann::ordered_json;

// A p99 this many times the p50 is a service time the planners' fixed d(b) does not describe.
constexpr double kSpreadRatio = 1.5;

std::string Header(const Report& r) {
  std::string out = r.target.task + "/" + r.target.variant + " on " + r.target.hardware_class +
                    ": " + r.address + (r.pod.empty() ? "" : " (pod " + r.pod + ")") + ", model " +
                    r.model + ", inputs " + r.inputs + "\n";
  return out + StrFormat("%d requests per batch size after %d warm-up, one at a time\n", r.requests,
                         r.warmup);
}

std::string FitLine(const Report& r) {
  std::string out = StrFormat("latencyMs: the %s of each size (%zu points)",
                              StatisticName(r.statistic), r.latency.points.size());
  if (!r.latency.fit) return out + ", a table interpolated linearly\n";
  const auto& q = r.latency.fit->coefficients;
  const auto& f = r.latency.fit->quality;
  return out + StrFormat(
                   ", fitted d(b) = %.4g b^2 + %.4g b + %.4g ms (RMSE %.3g ms, max error "
                   "%.3g ms, %d outliers)\n",
                   q.a, q.b, q.c, f.rmse_ms, f.max_error_ms, f.outliers);
}

std::string Rows(const Report& r) {
  std::string out =
      StrFormat("%5s %9s %9s %9s %9s %9s %10s %9s %7s\n", "BATCH", "REQUESTS", "P50_MS", "MEAN_MS",
                "P99_MS", "QUEUE_MS", "LATENCY_MS", "FIT_MS", "ERROR");
  for (size_t i = 0; i < r.batches.size(); ++i) {
    const MeasuredBatch& m = r.batches[i];
    const double written = r.latency.points[i].ms;
    const double fit = LatencyMs(r.latency, m.batch);
    const double error = written > 0 ? 100 * (fit - written) / written : 0.0;
    const std::string queue = m.queue_reported > 0 ? StrFormat("%.3f", m.queue_ms) : "-";
    out +=
        StrFormat("%5d %9d %9.3f %9.3f %9.3f %9s %10s %9.3f %+6.1f%%\n", m.batch, m.summary.count,
                  m.summary.p50_ms, m.summary.mean_ms, m.summary.p99_ms, queue.c_str(),
                  MsText(written).c_str(), fit, std::abs(error) < 0.05 ? 0.0 : error);
  }
  return out;
}

std::vector<std::string> AllNotes(const Report& r) {
  std::vector<std::string> notes = MeasurementNotes(r);
  notes.insert(notes.end(), r.notes.begin(), r.notes.end());
  return notes;
}

}  // namespace

std::vector<std::string> MeasurementNotes(const Report& r) {
  std::vector<std::string> notes;
  int answers = 0, reported = 0;
  for (const MeasuredBatch& m : r.batches) {
    answers += m.summary.count;
    reported += m.queue_reported;
  }
  if (reported == 0) {
    notes.emplace_back(
        "latencies are whole round trips: the server reports no queueing "
        "(parameters.pipescale_queue_ms)");
  } else {
    notes.push_back(
        StrFormat("the queueing the server reported (parameters.pipescale_queue_ms, "
                  "%d of %d answers) is subtracted from each round trip",
                  reported, answers));
  }
  for (const MeasuredBatch& m : r.batches) {
    if (m.summary.p50_ms > 0 && m.summary.p99_ms > kSpreadRatio * m.summary.p50_ms) {
      notes.push_back(
          StrFormat("at batch size %d the p99 is %.1f times the p50: the planners take "
                    "a batch's latency as fixed",
                    m.batch, m.summary.p99_ms / m.summary.p50_ms));
      break;
    }
  }
  return notes;
}

std::string ReportTable(const Report& r) {
  std::string out = Header(r) + "\n" + Rows(r) + "\n" + FitLine(r);
  for (const std::string& note : AllNotes(r)) out += "note: " + note + "\n";
  return out;
}

std::string ReportJson(const Report& r) {
  ordered_json batches = ordered_json::array();
  for (size_t i = 0; i < r.batches.size(); ++i) {
    const MeasuredBatch& m = r.batches[i];
    batches.push_back({{"batch", m.batch},
                       {"requests", m.summary.count},
                       {"p50Ms", m.summary.p50_ms},
                       {"meanMs", m.summary.mean_ms},
                       {"p99Ms", m.summary.p99_ms},
                       {"minMs", m.summary.min_ms},
                       {"maxMs", m.summary.max_ms},
                       {"queueMs", m.queue_ms},
                       {"queueReported", m.queue_reported},
                       {"latencyMs", r.latency.points[i].ms},
                       {"fitMs", LatencyMs(r.latency, m.batch)}});
  }
  ordered_json points = ordered_json::array();
  for (const auto& p : r.latency.points) points.push_back({p.batch, p.ms});
  ordered_json latency = ordered_json::object();
  if (r.latency.model == FitModel::kTable) latency["model"] = "table";
  latency["points"] = points;
  ordered_json fit = nullptr;
  if (r.latency.fit) {
    const auto& q = r.latency.fit->coefficients;
    const auto& f = r.latency.fit->quality;
    fit = {{"a", q.a},
           {"b", q.b},
           {"c", q.c},
           {"rmseMs", f.rmse_ms},
           {"maxErrorMs", f.max_error_ms},
           {"outliers", f.outliers}};
  }
  const ordered_json out = {{"task", r.target.task},
                            {"variant", r.target.variant},
                            {"hardwareClass", r.target.hardware_class},
                            {"address", r.address},
                            {"pod", r.pod},
                            {"model", r.model},
                            {"inputs", r.inputs},
                            {"statistic", StatisticName(r.statistic)},
                            {"requests", r.requests},
                            {"warmup", r.warmup},
                            {"batches", batches},
                            {"latencyMs", latency},
                            {"fit", fit},
                            {"notes", AllNotes(r)}};
  return out.dump(2) + "\n";
}

std::string ReportYaml(const Report& r) {
  const std::string head = "  latencyMs: ";
  const TextStyle style{.column = static_cast<int>(head.size())};
  return StrFormat(
             "# %s/%s on %s, measured by pipescale profile at %s: the %s of %d requests "
             "per batch size\n",
             r.target.task.c_str(), r.target.variant.c_str(), r.target.hardware_class.c_str(),
             EscapeUserText(r.address, 200).c_str(), StatisticName(r.statistic), r.requests) +
         "- hardwareClass: " + r.target.hardware_class + "\n" + head +
         LatencyText(r.latency, style) + "\n";
}

}  // namespace pipescale::profile
