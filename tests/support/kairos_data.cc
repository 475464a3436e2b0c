#include "support/kairos_data.h"

#include <fstream>
#include <sstream>

namespace pipescale::testing::kairos_data {
namespace {

const std::string& Dir() {
  static const std::string dir = std::string(PIPESCALE_SOURCE_DIR) + "/tests/data/hpdc23-kairos/";
  return dir;
}

}  // namespace

const std::vector<std::string>& Types() {
  static const std::vector<std::string> types = {"g4dn.xlarge", "c5n.2xlarge", "r5n.large",
                                                 "t3.xlarge"};
  return types;
}

double QosMs(const std::string& model) {
  static const std::map<std::string, double> qos = {
      {"ncf", 5}, {"rm2", 350}, {"wnd", 25}, {"mtwnd", 25}, {"dien", 35}};
  return qos.at(model);
}

bool Available() { return std::ifstream(Dir() + "instance.json").good(); }

std::vector<std::vector<std::string>> Csv(const std::string& file) {
  std::ifstream in(Dir() + file);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // the files have CRLF endings
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    rows.push_back(std::move(cells));
  }
  return rows;
}

nlohmann::json Json(const std::string& file) {
  std::ifstream in(Dir() + file);
  return in ? nlohmann::json::parse(in) : nlohmann::json::object();
}

std::map<std::pair<std::string, std::string>, std::map<int, double>> Summary() {
  std::map<std::pair<std::string, std::string>, std::map<int, double>> out;
  for (const auto& r : Csv("latency_summary.csv")) {
    out[{r[0], r[1]}][std::stoi(r[2])] = std::stod(r[12]);
  }
  return out;
}

optimizer::kairos::BatchMix Mix() {
  optimizer::kairos::BatchMix mix;
  for (const auto& r : Csv("batch_size_pmf.csv"))
    mix.emplace_back(std::stoi(r[0]), std::stod(r[1]));
  return mix;
}

optimizer::kairos::Profile ShippedProfile(const std::string& model) {
  const auto p = Json("allocator_profile.json")[model];
  optimizer::kairos::Profile out{.base_qps = p[Types()[0]]["qps"].get<double>(), .auxiliary = {}};
  for (size_t i = 1; i < Types().size(); ++i) {
    const auto& a = p[Types()[i]];
    optimizer::kairos::AuxiliaryProfile aux{.name = Types()[i],
                                            .violating_batch = a["vio_batch"].get<int>(),
                                            .small_ratio = a["small_ratio"].get<double>(),
                                            .time_ratio = a["time_ratio"].get<double>(),
                                            .qps = a["qps"].get<double>(),
                                            .qps_below = {}};
    for (const auto& [s, qps] : a["all_batch"].items()) {
      aux.qps_below[std::stoi(s)] = qps.get<double>();
    }
    out.auxiliary.push_back(aux);
  }
  return out;
}

std::vector<std::function<double(int)>> Latency(const std::string& model) {
  const auto summary = Summary();
  std::vector<std::function<double(int)>> out;
  for (const auto& type : Types()) {
    const std::map<int, double> table = summary.at({model, type});
    out.push_back([table](int batch) { return table.lower_bound(batch)->second; });
  }
  return out;
}

std::vector<double> Prices() { return Json("instance.json")["price"].get<std::vector<double>>(); }
std::vector<int> MaxCounts() { return Json("instance.json")["max_num"].get<std::vector<int>>(); }
double Budget() { return Json("instance.json")["cost"].get<double>(); }

}  // namespace pipescale::testing::kairos_data
