#include "gym/render.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/strings.h"

namespace pipescale::gym {

double PathOutcome::AdmittedAttainment() const {
  // As pipescale-loadgen counts it: a 503 is the router refusing at the door, so the requests
  // it let in are all the others.
  const auto shed = codes.find("503");
  const long admitted = sent - (shed == codes.end() ? 0 : shed->second);
  return admitted > 0 ? static_cast<double>(within_slo) / static_cast<double>(admitted) : 0;
}

long PolicyReport::Goodput() const {
  long total = 0;
  for (const auto& entry : paths) total += entry.second.within_slo;
  return total;
}

bool IsBaseline(std::string_view policy) {
  const std::string_view base = policy.substr(0, policy.find_first_of("@:+"));
  return base == "hpa" || base == "keda" || base == "kpa" || base.starts_with("fixed");
}

const PolicyReport* BestBaseline(const Report& report) {
  const PolicyReport* best = nullptr;
  for (const PolicyReport& p : report.policies) {
    if (!IsBaseline(p.policy)) continue;
    if (best == nullptr || p.GoodputPerDollar() > best->GoodputPerDollar()) best = &p;
  }
  return best != nullptr && best->GoodputPerDollar() > 0 ? best : nullptr;
}

namespace {

// A policy's goodput per dollar over the best baseline's; none without a baseline to compare.
std::optional<double> VersusBest(const PolicyReport& policy, const PolicyReport* best) {
  if (best == nullptr) return std::nullopt;
  return policy.GoodputPerDollar() / best->GoodputPerDollar();
}

// Every path any policy reports, sorted: a table per path, a column per path.
std::set<std::string> PathNames(const Report& report) {
  std::set<std::string> names;
  for (const PolicyReport& p : report.policies) {
    for (const auto& entry : p.paths) names.insert(entry.first);
    for (const IntervalRow& row : p.intervals) {
      for (const auto& entry : row.p99_ms) names.insert(entry.first);
      for (const auto& entry : row.attainment) names.insert(entry.first);
    }
  }
  return names;
}

std::set<std::string> TaskNames(const Report& report) {
  std::set<std::string> names;
  for (const PolicyReport& p : report.policies) {
    for (const IntervalRow& row : p.intervals) {
      for (const auto& entry : row.replicas) names.insert(entry.first);
    }
  }
  return names;
}

// ---- The table ----

struct Column {
  std::string head;
  bool left = false;  // names and lists read left-aligned, numbers right-aligned
};
using Rows = std::vector<std::vector<std::string>>;

// Characters as a terminal shows them (UTF-8 code points, not bytes), so that a name with an
// accent does not push its row's columns out of line.
size_t Width(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string AlignedLine(const std::vector<Column>& columns, const std::vector<size_t>& widths,
                        const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size() && i < columns.size(); ++i) {
    const std::string pad(widths[i] - Width(cells[i]), ' ');
    if (i > 0) line += "  ";
    line += columns[i].left ? cells[i] + pad : pad + cells[i];
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

std::string Columns(const std::vector<Column>& columns, const Rows& rows) {
  std::vector<size_t> widths;
  std::vector<std::string> heads;
  for (const Column& c : columns) {
    widths.push_back(Width(c.head));
    heads.push_back(c.head);
  }
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], Width(row[i]));
    }
  }
  std::string out = AlignedLine(columns, widths, heads);
  for (const auto& row : rows) out += AlignedLine(columns, widths, row);
  return out;
}

// "15 (late 12, deadline 3)": the total, then the reasons, most frequent first.
std::string DroppedCell(const PathOutcome& o) {
  std::vector<std::pair<std::string, long>> reasons(o.dropped.begin(), o.dropped.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  long total = 0;
  std::string list;
  for (const auto& [reason, n] : reasons) {
    total += n;
    if (n == 0) continue;
    list += (list.empty() ? "" : ", ") + reason + StrFormat(" %ld", n);
  }
  return list.empty() ? StrFormat("%ld", total) : StrFormat("%ld (%s)", total, list.c_str());
}

std::string PathTable(const Report& report, const std::string& path) {
  // Cold requests (scale to zero) get columns of their own where any policy had one.
  bool cold = false;
  for (const PolicyReport& p : report.policies) {
    const auto it = p.paths.find(path);
    cold = cold || (it != p.paths.end() && it->second.cold > 0);
  }
  Rows rows;
  for (const PolicyReport& p : report.policies) {
    const auto it = p.paths.find(path);
    if (it == p.paths.end()) continue;
    const PathOutcome& o = it->second;
    std::vector<std::string> row = {p.policy,
                                    StrFormat("%ld", o.sent),
                                    StrFormat("%ld", o.within_slo),
                                    StrFormat("%.1f%%", 100 * o.Attainment()),
                                    StrFormat("%.1f", o.p50_ms),
                                    StrFormat("%.1f", o.p99_ms),
                                    StrFormat("%g", o.slo_ms),
                                    DroppedCell(o)};
    if (cold) {
      row.insert(row.end() - 1, {StrFormat("%ld", o.cold), StrFormat("%.1f", o.cold_p99_ms),
                                 StrFormat("%.1f%%", 100 * o.WarmAttainment())});
    }
    rows.push_back(std::move(row));
  }
  std::vector<Column> columns = {{"POLICY", true}, {"SENT"},   {"WITHIN-SLO"}, {"ATTAINMENT"},
                                 {"P50-MS"},       {"P99-MS"}, {"SLO-MS"},     {"DROPPED", true}};
  if (cold) columns.insert(columns.end() - 1, {{"COLD"}, {"COLD-P99-MS"}, {"WARM-ATTAINMENT"}});
  return "\npath " + path + "\n" + Columns(columns, rows);
}

std::string RatioCell(std::optional<double> ratio) {
  return ratio ? StrFormat("%.2fx", *ratio) : "-";
}

std::string PolicyTable(const Report& report) {
  const PolicyReport* best = BestBaseline(report);
  const bool accuracy = std::any_of(report.policies.begin(), report.policies.end(),
                                    [](const PolicyReport& p) { return p.accuracy > 0; });
  std::vector<Column> columns = {{"POLICY", true}, {"GOODPUT"},     {"COST-$"},
                                 {"GOODPUT/$"},    {"VS-BASELINE"}, {"WALL-S"}};
  if (accuracy) columns.insert(columns.end() - 1, {"ACCURACY"});
  Rows rows;
  for (const PolicyReport& p : report.policies) {
    std::vector<std::string> row = {p.policy,
                                    StrFormat("%ld", p.Goodput()),
                                    StrFormat("%.3f", p.total_cost),
                                    StrFormat("%.1f", p.GoodputPerDollar()),
                                    RatioCell(VersusBest(p, best)),
                                    StrFormat("%.2f", p.wall_seconds)};
    if (accuracy) row.insert(row.end() - 1, StrFormat("%.3f", p.accuracy));
    rows.push_back(std::move(row));
  }
  const std::string against =
      best != nullptr ? "VS-BASELINE: goodput/$ against the best baseline, " + best->policy
                      : "no baseline (hpa, keda, kpa, fixed:N) to compare against";
  return "\npolicies (goodput: within the SLO; " + against + ")\n" + Columns(columns, rows);
}

// --tune's picks: per baseline the cheapest setting that kept every path at the attainment
// asked, or the closest it came.
std::string TunedTable(const Report& report) {
  if (report.tuned.empty()) return "";
  const std::vector<Column> columns = {{"BASELINE", true}, {"SETTING", true}, {"COST-$"},
                                       {"WORST-PATH"},     {"MEAN-REPLICAS"}, {"SETTINGS-RUN"}};
  Rows rows;
  for (const Tuned& t : report.tuned) {
    const std::optional<TunePoint>& pick = t.best ? t.best : t.closest;
    if (!pick) continue;
    rows.push_back({t.base, pick->policy + (t.best ? "" : " (none keeps it: the closest)"),
                    StrFormat("%.3f", pick->cost),
                    StrFormat("%.1f%%", 100 * pick->worst_attainment),
                    StrFormat("%.2f", pick->mean_replicas), StrFormat("%zu", t.points.size())});
  }
  return StrFormat(
             "\ntuned baselines (the cheapest setting with every path at %.1f%% or more; "
             "it runs above under its name, after the baseline's defaults)\n",
             100 * report.attainment) +
         Columns(columns, rows);
}

std::string HardwareTable(const Report& report) {
  std::set<std::string> classes;
  for (const PolicyReport& p : report.policies) {
    for (const auto& entry : p.replica_hours) classes.insert(entry.first);
  }
  std::vector<Column> columns = {
      {"POLICY", true}, {"MEAN-REPLICAS"}, {"POD-STARTS"}, {"SCALING-ACTIONS"}};
  for (const std::string& c : classes) columns.push_back({"REPLICA-H:" + c});
  Rows rows;
  for (const PolicyReport& p : report.policies) {
    std::vector<std::string> row = {p.policy, StrFormat("%.2f", p.mean_replicas),
                                    StrFormat("%ld", p.pod_starts),
                                    StrFormat("%ld", p.scaling_actions)};
    for (const std::string& c : classes) {
      const auto it = p.replica_hours.find(c);
      row.push_back(it == p.replica_hours.end() ? "-" : StrFormat("%.2f", it->second));
    }
    rows.push_back(std::move(row));
  }
  return "\nhardware (replica-hours by class)\n" + Columns(columns, rows);
}

// The one line a reader takes away: who served the most within the SLO per dollar.
std::string Headline(const Report& report) {
  const PolicyReport* top = nullptr;
  for (const PolicyReport& p : report.policies) {
    if (top == nullptr || p.GoodputPerDollar() > top->GoodputPerDollar()) top = &p;
  }
  if (top == nullptr) return "\nno policy ran\n";
  std::string line = "\nbest goodput per dollar: " + top->policy +
                     StrFormat(", %.1f requests within the SLO per $", top->GoodputPerDollar());
  const PolicyReport* best = BestBaseline(report);
  if (best != nullptr && best != top) {
    line +=
        StrFormat(", %.2fx the best baseline's (", *VersusBest(*top, best)) + best->policy + ")";
  }
  return line + "\n";
}

// ---- The CSV ----

// RFC 4180: quoted, with quotes doubled, only when the field needs it.
std::string CsvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The shortest text that reads back as the same double: the CSV is for programs.
std::string Number(double v) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), v);
  return {buffer.data(), result.ptr};
}

template <typename Map>
std::string CellOf(const Map& values, const std::string& key) {
  const auto it = values.find(key);
  return it == values.end() ? "" : Number(it->second);
}

std::string CsvHeader(const std::set<std::string>& tasks, const std::set<std::string>& paths) {
  std::string line = "policy,at_s,offered_rps";
  for (const std::string& t : tasks) line += "," + CsvField("replicas:" + t);
  for (const std::string& p : paths) line += "," + CsvField("p99_ms:" + p);
  for (const std::string& p : paths) line += "," + CsvField("attainment:" + p);
  return line + ",cost_per_hour\n";
}

std::string CsvRow(const std::string& policy, const IntervalRow& row,
                   const std::set<std::string>& tasks, const std::set<std::string>& paths) {
  std::string line = CsvField(policy) + "," + Number(row.at_s) + "," + Number(row.offered_rps);
  for (const std::string& t : tasks) line += "," + CellOf(row.replicas, t);
  for (const std::string& p : paths) line += "," + CellOf(row.p99_ms, p);
  for (const std::string& p : paths) line += "," + CellOf(row.attainment, p);
  return line + "," + Number(row.cost_per_hour) + "\n";
}

// ---- The SVG ----

constexpr double kWidth = 960;
constexpr double kLeft = 70;  // room for the y tick labels and the unit
constexpr double kPlotWidth = 670;
constexpr double kLegendX = kLeft + kPlotWidth + 20;
constexpr double kTop = 60;  // the document's title, then the first panel's
constexpr double kPanelHeight = 150;
constexpr double kGap = 50;  // a panel's title above it; the last one's tick labels below
constexpr size_t kLegendChars = 26;
// Tableau's ten colours but grey, which the SLO lines use.
constexpr std::array<const char*, 9> kPalette = {"#1f77b4", "#ff7f0e", "#2ca02c",
                                                 "#d62728", "#9467bd", "#8c564b",
                                                 "#e377c2", "#bcbd22", "#17becf"};
// Colour says the policy, so paths are told apart by line style.
constexpr std::array<const char*, 4> kPathDash = {"", "2 3", "9 3 2 3", "12 6"};
constexpr const char* kSloDash = "6 4";
constexpr const char* kSloColour = "#555555";

// Text and attribute values for XML. Control characters XML 1.0 forbids (all below 0x20 but
// tab, newline and return) become '?', so that no name can make the document ill-formed.
std::string Xml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        const bool forbidden =
            static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r';
        out += forbidden ? '?' : c;
    }
  }
  return out;
}

// At most `chars` code points, with "…" when cut: a legend stays in its margin.
std::string Shortened(std::string_view text, size_t chars) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (seen++ == chars) return std::string(text.substr(0, i)) + "\u2026";
  }
  return std::string(text);
}

const char* Colour(size_t i) { return kPalette[i % kPalette.size()]; }
const char* PathDash(size_t i) { return kPathDash[i % kPathDash.size()]; }

struct Series {
  std::string name;  // the tooltip
  std::string colour;
  std::string dash;                               // empty: solid
  std::vector<std::pair<double, double>> points;  // (seconds, value)
};

struct LegendEntry {
  std::string label;
  std::string colour;
  std::string dash;
};

struct Panel {
  std::string id;
  std::string title;
  std::string unit;
  std::vector<Series> series;
  std::vector<double> slos;  // dashed horizontal lines, as many as paths
  std::vector<LegendEntry> legend;
  double fixed_max = 0;  // the y axis's top when the quantity has one (100%); 0: from the data
};

// An axis from 0: its top a round number at or above the largest value, ticks every `step`.
struct Axis {
  double max = 1;
  double step = 0.25;
};

// About `divisions` ticks at 1, 2 or 5 times a power of ten.
Axis NiceAxis(double largest, double divisions) {
  if (!(largest > 0) || !std::isfinite(largest)) return {};
  const double raw = largest / divisions;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double step = magnitude * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
  return {std::ceil(largest / step - 1e-9) * step, step};
}

Axis YAxis(const Panel& panel) {
  if (panel.fixed_max > 0) return {panel.fixed_max, panel.fixed_max / 5};
  double largest = 0;
  for (const Series& s : panel.series) {
    for (const auto& point : s.points) largest = std::max(largest, point.second);
  }
  for (double slo : panel.slos) largest = std::max(largest, slo);
  // Headroom, so that a line or an SLO at the largest value is not drawn over the frame.
  return NiceAxis(1.05 * largest, 5);
}

// Where a value lands: x from the left edge of the plot, y from the top of the panel.
struct Frame {
  double top = 0;
  Axis x, y;
  double X(double seconds) const { return kLeft + kPlotWidth * seconds / x.max; }
  double Y(double value) const {
    return top + kPanelHeight * (1 - std::clamp(value / y.max, 0.0, 1.0));
  }
};

std::string Line(double x1, double y1, double x2, double y2, const std::string& style) {
  return StrFormat(R"(<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s/>)", x1, y1, x2, y2,
                   style.c_str()) +
         "\n";
}

std::string Text(double x, double y, const std::string& attributes, std::string_view text) {
  return StrFormat(R"(<text x="%.1f" y="%.1f"%s>)", x, y, attributes.c_str()) + Xml(text) +
         "</text>\n";
}

std::string Stroke(const std::string& colour, const std::string& dash, double width) {
  std::string style = StrFormat(R"(stroke="%s" stroke-width="%g")", Xml(colour).c_str(), width);
  if (!dash.empty()) style += StrFormat(R"( stroke-dasharray="%s")", dash.c_str());
  return style;
}

std::string YGrid(const Frame& frame) {
  std::string out;
  for (int k = 0; k * frame.y.step <= frame.y.max * (1 + 1e-9); ++k) {
    const double v = k * frame.y.step;
    out += Line(kLeft, frame.Y(v), kLeft + kPlotWidth, frame.Y(v), R"(stroke="#e0e0e0")");
    out += Text(kLeft - 6, frame.Y(v) + 4, R"( text-anchor="end")", StrFormat("%g", v));
  }
  return out;
}

std::string XGrid(const Frame& frame, bool labels) {
  std::string out;
  const double bottom = frame.top + kPanelHeight;
  for (int k = 0; k * frame.x.step <= frame.x.max * (1 + 1e-9); ++k) {
    const double s = k * frame.x.step;
    out += Line(frame.X(s), frame.top, frame.X(s), bottom, R"(stroke="#e0e0e0")");
    if (labels)
      out += Text(frame.X(s), bottom + 14, R"( text-anchor="middle")", StrFormat("%g", s));
  }
  return out;
}

std::string Polyline(const Series& s, const Frame& frame) {
  std::string points;
  for (const auto& [seconds, value] : s.points) {
    points += StrFormat("%s%.1f,%.1f", points.empty() ? "" : " ", frame.X(seconds), frame.Y(value));
  }
  return R"(<polyline class="series" fill="none" )" + Stroke(s.colour, s.dash, 1.5) +
         R"( points=")" + points + R"("><title>)" + Xml(s.name) + "</title></polyline>\n";
}

std::string Legend(const Panel& panel, double top) {
  std::string out;
  for (size_t i = 0; i < panel.legend.size(); ++i) {
    const LegendEntry& e = panel.legend[i];
    const double y = top + 8 + 15 * static_cast<double>(i);
    out += Line(kLegendX, y, kLegendX + 24, y, Stroke(e.colour, e.dash, 2));
    out += Text(kLegendX + 30, y + 4, "", Shortened(e.label, kLegendChars));
  }
  return out;
}

std::string DrawPanel(const Panel& panel, Frame frame, bool last) {
  frame.y = YAxis(panel);
  const double top = frame.top;
  std::string out = R"(<g class="panel" id="panel-)" + panel.id + "\">\n";
  out += Text(kLeft, top - 10, R"( font-size="13" font-weight="bold")", panel.title);
  out += YGrid(frame) + XGrid(frame, last);
  out +=
      StrFormat(R"svg(<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">)svg",
                kLeft - 42, top + kPanelHeight / 2) +
      Xml(panel.unit) + "</text>\n";
  for (double slo : panel.slos) {
    out += Line(kLeft, frame.Y(slo), kLeft + kPlotWidth, frame.Y(slo),
                Stroke(kSloColour, kSloDash, 1.2));
  }
  for (const Series& s : panel.series) out += Polyline(s, frame);
  out +=
      StrFormat(R"(<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>)",
                kLeft, top, kPlotWidth, kPanelHeight) +
      "\n";
  return out + Legend(panel, top) + "</g>\n";
}

std::vector<LegendEntry> PolicyLegend(const Report& report) {
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < report.policies.size(); ++i) {
    legend.push_back({report.policies[i].policy, Colour(i), ""});
  }
  return legend;
}

Panel LoadPanel(const Report& report) {
  Panel panel{.id = "load", .title = "Offered load", .unit = "req/s"};
  for (size_t i = 0; i < report.policies.size(); ++i) {
    const PolicyReport& p = report.policies[i];
    Series s{.name = p.policy, .colour = Colour(i)};
    for (const IntervalRow& row : p.intervals) s.points.emplace_back(row.at_s, row.offered_rps);
    panel.series.push_back(std::move(s));
  }
  panel.legend = PolicyLegend(report);
  return panel;
}

// One policy: a line per task, which says where its replicas went. Several: the sum, which is
// what they can be compared by.
Panel ReplicasPanel(const Report& report) {
  Panel panel{.id = "replicas", .title = "Ready replicas, summed over tasks", .unit = "replicas"};
  if (report.policies.size() == 1) {
    const PolicyReport& p = report.policies.front();
    panel.title = "Ready replicas by task (" + p.policy + ")";
    size_t i = 0;
    for (const std::string& task : TaskNames(report)) {
      Series s{.name = task, .colour = Colour(i++)};
      for (const IntervalRow& row : p.intervals) {
        const auto it = row.replicas.find(task);
        s.points.emplace_back(row.at_s, it == row.replicas.end() ? 0 : it->second);
      }
      panel.legend.push_back({task, s.colour, ""});
      panel.series.push_back(std::move(s));
    }
    return panel;
  }
  for (size_t i = 0; i < report.policies.size(); ++i) {
    const PolicyReport& p = report.policies[i];
    Series s{.name = p.policy, .colour = Colour(i)};
    for (const IntervalRow& row : p.intervals) {
      int sum = 0;
      for (const auto& entry : row.replicas) sum += entry.second;
      s.points.emplace_back(row.at_s, sum);
    }
    panel.series.push_back(std::move(s));
  }
  panel.legend = PolicyLegend(report);
  return panel;
}

// A series per (policy, path) of one per-path quantity of the intervals. `skip_zero`: an
// interval without any 200 has no p99 (the row holds 0), so the line joins its neighbours
// rather than dive to a latency nobody saw; attainment shows such an interval instead.
void PerPathSeries(const Report& report, Panel& panel,
                   std::map<std::string, double> IntervalRow::*values, double scale,
                   bool skip_zero) {
  size_t j = 0;
  for (const std::string& path : PathNames(report)) {
    for (size_t i = 0; i < report.policies.size(); ++i) {
      const PolicyReport& p = report.policies[i];
      Series s{.name = p.policy + " \u00b7 " + path, .colour = Colour(i), .dash = PathDash(j)};
      for (const IntervalRow& row : p.intervals) {
        const auto it = (row.*values).find(path);
        if (it == (row.*values).end() || !std::isfinite(it->second)) continue;
        if (skip_zero && it->second <= 0) continue;
        s.points.emplace_back(row.at_s, scale * it->second);
      }
      panel.series.push_back(std::move(s));
    }
    panel.legend.push_back({"path " + path, "#222222", PathDash(j++)});
  }
}

Panel LatencyPanel(const Report& report) {
  Panel panel{.id = "p99", .title = "p99 latency per path, dashed grey: its SLO", .unit = "ms"};
  PerPathSeries(report, panel, &IntervalRow::p99_ms, 1, true);
  for (const std::string& path : PathNames(report)) {
    for (const PolicyReport& p : report.policies) {
      const auto it = p.paths.find(path);
      if (it == p.paths.end() || it->second.slo_ms <= 0) continue;
      panel.slos.push_back(it->second.slo_ms);
      panel.legend.push_back(
          {StrFormat("SLO %g ms: ", it->second.slo_ms) + path, kSloColour, kSloDash});
      break;  // the pipeline's SLO, the same under every policy
    }
  }
  return panel;
}

Panel AttainmentPanel(const Report& report) {
  Panel panel{.id = "attainment",
              .title = "SLO attainment per interval (of the requests sent in it)",
              .unit = "% within SLO",
              .fixed_max = 100};
  PerPathSeries(report, panel, &IntervalRow::attainment, 100, false);
  return panel;
}

Axis TimeAxis(const Report& report) {
  double end = report.seconds;
  for (const PolicyReport& p : report.policies) {
    for (const IntervalRow& row : p.intervals) end = std::max(end, row.at_s);
  }
  return NiceAxis(end, 6);  // the plot is wide: more ticks, and an end nearer the run's
}

std::string SvgTitle(const Report& report) {
  return "pipescale simulate: pipeline " + report.pipeline + ", trace " + report.trace +
         StrFormat(", %g s simulated, seed %u", report.seconds, report.seed);
}

}  // namespace

std::string RenderTable(const Report& report) {
  std::string out = "pipeline " + report.pipeline + ", trace " + report.trace +
                    StrFormat(", %g s simulated, seed %u\n", report.seconds, report.seed);
  for (const std::string& path : PathNames(report)) out += PathTable(report, path);
  return out + PolicyTable(report) + HardwareTable(report) + TunedTable(report) + Headline(report);
}

namespace {

nlohmann::json PathJson(const PathOutcome& o) {
  nlohmann::json out = {{"sloMs", o.slo_ms},
                        {"sent", o.sent},
                        {"answered", o.answered},
                        {"withinSlo", o.within_slo},
                        {"codes", o.codes},
                        {"dropped", o.dropped},
                        {"meanMs", o.mean_ms},
                        {"p50Ms", o.p50_ms},
                        {"p99Ms", o.p99_ms},
                        {"sloAttainment", o.Attainment()},
                        {"admittedSloAttainment", o.AdmittedAttainment()}};
  // Only where a path slept (spec.scaleToZero): the rest are the load generator's names.
  if (o.cold > 0) {
    out.update({{"cold", o.cold},
                {"coldWithinSlo", o.cold_within_slo},
                {"coldP99Ms", o.cold_p99_ms},
                {"warmSloAttainment", o.WarmAttainment()}});
  }
  return out;
}

nlohmann::json IntervalJson(const IntervalRow& row) {
  return {
      {"atS", row.at_s},     {"offeredRps", row.offered_rps}, {"replicas", row.replicas},
      {"p99Ms", row.p99_ms}, {"attainment", row.attainment},  {"costPerHour", row.cost_per_hour}};
}

nlohmann::json PolicyJson(const PolicyReport& p, const PolicyReport* best) {
  nlohmann::json paths = nlohmann::json::object();
  for (const auto& [name, outcome] : p.paths) paths[name] = PathJson(outcome);
  nlohmann::json intervals = nlohmann::json::array();
  for (const IntervalRow& row : p.intervals) intervals.push_back(IntervalJson(row));
  const std::optional<double> ratio = VersusBest(p, best);
  return {{"policy", p.policy},
          {"baseline", IsBaseline(p.policy)},
          {"paths", std::move(paths)},
          {"replicaHours", p.replica_hours},
          {"cost", p.cost},
          {"totalCost", p.total_cost},
          {"podStarts", p.pod_starts},
          {"scalingActions", p.scaling_actions},
          {"accuracy", p.accuracy},
          {"meanReplicas", p.mean_replicas},
          {"goodput", p.Goodput()},
          {"goodputPerDollar", p.GoodputPerDollar()},
          {"vsBestBaseline", ratio ? nlohmann::json(*ratio) : nlohmann::json()},
          {"wallSeconds", p.wall_seconds},
          {"intervals", std::move(intervals)}};
}

nlohmann::json TunePointJson(const std::optional<TunePoint>& p) {
  if (!p) return nullptr;
  return {{"policy", p->policy},
          {"cost", p->cost},
          {"worstPathAttainment", p->worst_attainment},
          {"meanReplicas", p->mean_replicas}};
}

nlohmann::json TunedJson(const Report& report) {
  nlohmann::json out = nlohmann::json::array();
  for (const Tuned& t : report.tuned) {
    nlohmann::json points = nlohmann::json::array();
    for (const TunePoint& p : t.points) points.push_back(TunePointJson(p));
    out.push_back({{"baseline", t.base},
                   {"attainment", report.attainment},
                   {"best", TunePointJson(t.best)},
                   {"closest", TunePointJson(t.closest)},
                   {"settings", std::move(points)}});
  }
  return out;
}

}  // namespace

nlohmann::json ToJson(const Report& report) {
  const PolicyReport* best = BestBaseline(report);
  nlohmann::json policies = nlohmann::json::array();
  for (const PolicyReport& p : report.policies) policies.push_back(PolicyJson(p, best));
  return {{"pipeline", report.pipeline},
          {"trace", report.trace},
          {"seconds", report.seconds},
          {"seed", report.seed},
          {"bestBaseline", best != nullptr ? nlohmann::json(best->policy) : nlohmann::json()},
          {"policies", std::move(policies)},
          {"tuned", TunedJson(report)}};
}

namespace {

// One policy's figures over every pipeline run with it.
struct Totals {
  std::string policy;
  long sent = 0, within_slo = 0, pod_starts = 0;
  double cost = 0;
  double worst_path = 1;  // the lowest attainment of any pipeline's path that was sent requests
  double Attainment() const { return sent > 0 ? static_cast<double>(within_slo) / sent : 0; }
};

std::vector<Totals> TotalsOf(const std::vector<Report>& reports) {
  std::vector<Totals> out;
  for (const Report& r : reports) {
    for (size_t i = 0; i < r.policies.size(); ++i) {
      const PolicyReport& p = r.policies[i];
      if (out.size() <= i) out.push_back({.policy = p.policy});
      Totals& t = out[i];
      for (const auto& [name, path] : p.paths) {
        t.sent += path.sent;
        t.within_slo += path.within_slo;
        if (path.sent > 0) t.worst_path = std::min(t.worst_path, path.Attainment());
      }
      t.pod_starts += p.pod_starts;
      t.cost += p.total_cost;
    }
  }
  return out;
}

}  // namespace

std::string RenderTogether(const std::vector<Report>& reports) {
  std::string out;
  for (const Report& r : reports) out += RenderTable(r) + "\n";
  const std::vector<Column> columns = {{"POLICY", true}, {"SENT"},       {"WITHIN-SLO"}, {"SHARE"},
                                       {"WORST-PATH"},   {"POD-STARTS"}, {"COST-$"}};
  Rows rows;
  for (const Totals& t : TotalsOf(reports)) {
    rows.push_back({t.policy, StrFormat("%ld", t.sent), StrFormat("%ld", t.within_slo),
                    StrFormat("%.4f", t.Attainment()), StrFormat("%.4f", t.worst_path),
                    StrFormat("%ld", t.pod_starts), StrFormat("%.3f", t.cost)});
  }
  return out +
         StrFormat("all %zu pipelines together (within the SLO, every path)\n", reports.size()) +
         Columns(columns, rows);
}

nlohmann::json TogetherJson(const std::vector<Report>& reports) {
  nlohmann::json pipelines = nlohmann::json::array();
  for (const Report& r : reports) pipelines.push_back(ToJson(r));
  nlohmann::json totals = nlohmann::json::array();
  for (const Totals& t : TotalsOf(reports)) {
    totals.push_back({{"policy", t.policy},
                      {"sent", t.sent},
                      {"withinSlo", t.within_slo},
                      {"sloAttainment", t.Attainment()},
                      {"worstPathAttainment", t.worst_path},
                      {"podStarts", t.pod_starts},
                      {"totalCost", t.cost}});
  }
  return {{"pipelines", std::move(pipelines)}, {"totals", std::move(totals)}};
}

std::string RenderCsv(const Report& report) {
  const std::set<std::string> tasks = TaskNames(report);
  const std::set<std::string> paths = PathNames(report);
  std::string out = CsvHeader(tasks, paths);
  for (const PolicyReport& p : report.policies) {
    for (const IntervalRow& row : p.intervals) out += CsvRow(p.policy, row, tasks, paths);
  }
  return out;
}

std::string RenderSvg(const Report& report) {
  const std::vector<Panel> panels = {LoadPanel(report), ReplicasPanel(report), LatencyPanel(report),
                                     AttainmentPanel(report)};
  const double height = kTop + static_cast<double>(panels.size()) * (kPanelHeight + kGap) + 10;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += StrFormat(R"(<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" )"
                   R"(viewBox="0 0 %g %g" font-family="sans-serif" font-size="11">)",
                   kWidth, height, kWidth, height) +
         "\n<title>" + Xml(SvgTitle(report)) + "</title>\n";
  out += R"(<rect width="100%" height="100%" fill="white"/>)"
         "\n";
  out += Text(kLeft, 22, R"( font-size="15" font-weight="bold")", SvgTitle(report));
  Frame frame{.top = kTop, .x = TimeAxis(report)};
  for (size_t i = 0; i < panels.size(); ++i) {
    out += DrawPanel(panels[i], frame, i + 1 == panels.size());
    frame.top += kPanelHeight + kGap;
  }
  const double axis_label_y = frame.top - kGap + 30;
  out += Text(kLeft + kPlotWidth / 2, axis_label_y, R"( text-anchor="middle")", "time (s)");
  return out + "</svg>\n";
}

}  // namespace pipescale::gym
