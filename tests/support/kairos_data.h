// The Kairos artifact's measured data (tests/data/hpdc23-kairos, Copyright (c) 2023 Baolin Li,
// MIT licence: its NOTICE.md), read for the tests and benchmarks that check against it.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "optimizer/kairos.h"

namespace pipescale::testing::kairos_data {

// The four EC2 types, base first, as in instance.json.
const std::vector<std::string>& Types();
// QoS per model (ms), from the paper's Table 3.
double QosMs(const std::string& model);

// A CSV file's rows after its header, cells as text; empty when the file is missing.
std::vector<std::vector<std::string>> Csv(const std::string& file);
nlohmann::json Json(const std::string& file);
bool Available();  // whether the data sits beside the repo

// total_mean_drop_max_ms by (model, type) and batch.
std::map<std::pair<std::string, std::string>, std::map<int, double>> Summary();
// The query-size mix of batch_size_pmf.csv.
optimizer::kairos::BatchMix Mix();
// allocator_profile.json's profile of one model, as the upper bound's input.
optimizer::kairos::Profile ShippedProfile(const std::string& model);
// One model's latency by type (base first) and batch, from Summary().
std::vector<std::function<double(int)>> Latency(const std::string& model);
std::vector<double> Prices();  // instance.json
std::vector<int> MaxCounts();  // instance.json
double Budget();               // instance.json: $/h

}  // namespace pipescale::testing::kairos_data
