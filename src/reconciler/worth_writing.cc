#include "reconciler/worth_writing.h"

#include <algorithm>
#include <cmath>

namespace pipescale::reconciler {
namespace {

using nlohmann::json;

// `exact`: compare floating-point numbers exactly too. `top`: these are the status's own fields.
bool Differs(const json& written, const json& decided, bool exact, bool top) {
  // The apiserver hands back 2.0 as 2, so a number's type is the decision's, not the server's.
  if (decided.is_number_float() && written.is_number() && !exact) {
    return MeasurementMoved(written.get<double>(), decided.get<double>());
  }
  if (decided.type() != written.type()) return decided != written;  // 2 == 2.0 all the same
  if (decided.is_object()) {
    if (decided.size() != written.size()) return true;
    for (auto it = decided.begin(); it != decided.end(); ++it) {
      const auto there = written.find(it.key());
      const bool memory = top && it.key() == "memory";
      if (there == written.end()) return true;
      if (!exact && IsPrediction(it.key()) && there->is_number() && it.value().is_number()) {
        continue;
      }
      if (!exact && IsDescription(it.key()) && there->is_string() && it.value().is_string() &&
          SameWords(there->get_ref<const std::string&>(),
                    it.value().get_ref<const std::string&>())) {
        continue;
      }
      if (Differs(*there, it.value(), exact || memory, false)) return true;
    }
    return false;
  }
  if (decided.is_array()) {
    if (decided.size() != written.size()) return true;
    for (size_t i = 0; i < decided.size(); ++i) {
      if (Differs(written[i], decided[i], exact, false)) return true;
    }
    return false;
  }
  return decided != written;
}

}  // namespace

// Near a queue's saturation a 2% move of the rate moves its predictions by 25% or more: at 5000
// pipelines every status write of a steady run was one of these.
bool IsPrediction(std::string_view key) { return key == "queueMs" || key == "predictedLatencyMs"; }

bool IsDescription(std::string_view key) { return key == "message"; }

bool SameWords(std::string_view written, std::string_view decided) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0;
  size_t j = 0;
  while (i < written.size() && j < decided.size()) {
    if (digit(written[i]) && digit(decided[j])) {  // a number on both sides: skip both
      while (i < written.size() && (digit(written[i]) || written[i] == '.')) ++i;
      while (j < decided.size() && (digit(decided[j]) || decided[j] == '.')) ++j;
      continue;
    }
    if (written[i++] != decided[j++]) return false;
  }
  return i == written.size() && j == decided.size();
}

bool MeasurementMoved(double written, double decided) {
  const double change = std::abs(decided - written);
  return change > kStatusJitterFloor &&
         change > kStatusJitter * std::max(std::abs(written), std::abs(decided));
}

bool WorthWriting(const json& written, const json& decided) {
  return Differs(written, decided, false, true);
}

}  // namespace pipescale::reconciler
