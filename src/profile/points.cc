#include "profile/points.h"

#include <algorithm>
#include <cstdlib>

#include "api/pipeline_parse.h"
#include "common/strings.h"

namespace pipescale::profile {
namespace {

constexpr int kMinListWidth = 60;

// The key as the document writes keys.
std::string Key(const TextStyle& style, const char* key) {
  return style.json ? "\"" + std::string(key) + "\"" : std::string(key);
}

// "[[1, 10.2], [2, 12.9]]", wrapped past style.width with continuation lines at `indent`.
std::string PointList(const std::vector<model::LatencyPoint>& points, const TextStyle& style,
                      int start_column) {
  std::string out = "[";
  int column = start_column + 1;
  const int indent = start_column + 1;
  // Deep in a line, a few points a line at least.
  const int width = std::max(style.width, indent + kMinListWidth);
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string item =
        "[" + std::to_string(points[i].batch) + ", " + MsText(points[i].ms) + "]";
    const bool last = i + 1 == points.size();
    const int needed = static_cast<int>(item.size()) + (last ? 2 : 1);
    if (i > 0 && column + 1 + needed > width) {
      out += style.newline + std::string(indent, ' ');
      column = indent;
    } else if (i > 0) {
      out += " ";
      ++column;
    }
    out += item + (last ? "]" : ",");
    column += static_cast<int>(item.size()) + 1;
  }
  return points.empty() ? "[]" : out;
}

}  // namespace

std::string MsText(double ms) {
  std::string text = StrFormat("%.3f", ms);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

Result<Latency> MakeLatency(std::span<const MeasuredBatch> batches, Statistic statistic,
                            FitModel model) {
  if (batches.empty()) return Error{ErrorKind::kInvalid, "no batch size was measured"};
  Latency out;
  for (const MeasuredBatch& m : batches) {
    const double ms = std::max(Pick(m.summary, statistic), limits::kMinMs);
    // As the document will hold it, so that what is reported is what is parsed back.
    out.points.push_back({m.batch, std::strtod(MsText(ms).c_str(), nullptr)});
  }
  std::sort(out.points.begin(), out.points.end(),
            [](const auto& x, const auto& y) { return x.batch < y.batch; });
  out.model = out.points.size() >= 3 ? model : FitModel::kTable;
  if (out.model == FitModel::kQuadratic) {
    auto fit = optimizer::FitQuadratic(out.points);
    if (!fit) return fit.error();
    out.fit = *fit;
  }
  return out;
}

double LatencyMs(const Latency& latency, int batch) {
  model::LatencyProfile profile;
  profile.points = latency.points;
  profile.kind = model::LatencyProfile::Kind::kTable;
  if (latency.fit) {
    profile.kind = model::LatencyProfile::Kind::kQuadratic;
    profile.quadratic = latency.fit->coefficients;
  }
  return profile.Ms(batch);
}

std::string LatencyText(const Latency& latency, const TextStyle& style) {
  const bool table = latency.model == FitModel::kTable;
  if (style.block) {
    std::string out;
    if (table)
      out += Key(style, "model") + ": table" + style.newline + std::string(style.column, ' ');
    const std::string key = Key(style, "points") + ": ";
    return out + key +
           PointList(latency.points, style, style.column + static_cast<int>(key.size()));
  }
  std::string out = "{";
  if (table) out += Key(style, "model") + ": " + (style.json ? "\"table\"" : "table") + ", ";
  out += Key(style, "points") + ": ";
  return out + PointList(latency.points, style, style.column + static_cast<int>(out.size())) + "}";
}

}  // namespace pipescale::profile
