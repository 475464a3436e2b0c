#include "optimizer/milp_text.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace pipescale::optimizer {
namespace {

std::string Hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// Whitespace-separated tokens, read in order; every read fails once one has.
class Tokens {
 public:
  explicit Tokens(std::string_view text) : text_(text) {}

  std::string_view Next() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    const size_t start = at_;
    while (at_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    return text_.substr(start, at_ - start);
  }
  bool Expect(std::string_view word) {
    if (Next() == word) return true;
    Fail("expected '" + std::string(word) + "'");
    return false;
  }
  double Number() {
    const std::string token(Next());
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (token.empty() || end != token.c_str() + token.size()) Fail("not a number: " + token);
    return v;
  }
  // A count or an index: 0 <= n < limit.
  size_t Index(size_t limit) {
    const double v = Number();
    if (!(v >= 0 && v < static_cast<double>(limit)) ||
        v != static_cast<double>(static_cast<size_t>(v))) {
      Fail("out of range");
      return 0;
    }
    return static_cast<size_t>(v);
  }
  void Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " near byte " + std::to_string(at_);
  }
  const std::string& error() const { return error_; }

 private:
  std::string_view text_;
  size_t at_ = 0;
  std::string error_;
};

constexpr size_t kMaxSize = 10'000'000;  // vars, rows or terms: far beyond any plan's MILP

Error Invalid(const std::string& what, const Tokens& in) {
  return Error{ErrorKind::kInvalid, what + ": " + in.error()};
}

}  // namespace

std::string WriteMilp(const Milp& milp, const MilpOptions& options) {
  std::string out = "milp 2\nsense ";
  out += milp.sense() == Milp::Sense::kMaximize ? "max" : "min";
  out += "\noptions " + Hex(options.time_limit_seconds) + " " + Hex(options.relative_gap) + " " +
         (options.cuts ? "1" : "0") + "\nvars " + std::to_string(milp.vars().size()) + "\n";
  for (const Milp::Var& v : milp.vars()) {
    out +=
        Hex(v.lower) + " " + Hex(v.upper) + " " + Hex(v.objective) + (v.integer ? " 1\n" : " 0\n");
  }
  out += "rows " + std::to_string(milp.rows().size()) + "\n";
  for (const Milp::Row& r : milp.rows()) {
    out += Hex(r.lower) + " " + Hex(r.upper) + " " + std::to_string(r.terms.size());
    for (const MilpTerm& t : r.terms) out += " " + std::to_string(t.var) + " " + Hex(t.coef);
    out += "\n";
  }
  out += "alternatives " + std::to_string(milp.alternatives().size()) + "\n";
  for (const auto& bounds : milp.alternatives()) {
    out += std::to_string(bounds.size());
    for (const Milp::Bound& b : bounds) {
      out += " " + std::to_string(b.var) + " " + Hex(b.lower) + " " + Hex(b.upper);
    }
    out += "\n";
  }
  return out + "end\n";
}

Result<std::pair<Milp, MilpOptions>> ReadMilp(std::string_view text) {
  Tokens in(text);
  Milp milp;
  MilpOptions options;
  in.Expect("milp") && in.Expect("2") && in.Expect("sense");
  const std::string_view sense = in.Next();
  if (sense != "min" && sense != "max") in.Fail("sense must be min or max");
  milp.set_sense(sense == "max" ? Milp::Sense::kMaximize : Milp::Sense::kMinimize);
  in.Expect("options");
  options.time_limit_seconds = in.Number();
  options.relative_gap = in.Number();
  options.cuts = in.Index(2) == 1;
  in.Expect("vars");
  const size_t vars = in.Index(kMaxSize);
  for (size_t i = 0; i < vars && in.error().empty(); ++i) {
    const double lower = in.Number(), upper = in.Number(), objective = in.Number();
    const bool integer = in.Index(2) == 1;
    if (!(lower <= upper)) in.Fail("a variable's lower bound exceeds its upper");
    if (in.error().empty()) milp.AddVar(lower, upper, objective, integer);
  }
  in.Expect("rows");
  const size_t rows = in.Index(kMaxSize);
  for (size_t r = 0; r < rows && in.error().empty(); ++r) {
    const double lower = in.Number(), upper = in.Number();
    const size_t n = in.Index(kMaxSize);
    std::vector<MilpTerm> terms;
    for (size_t t = 0; t < n && in.error().empty(); ++t) {
      const int var = static_cast<int>(in.Index(vars));
      terms.push_back({var, in.Number()});
    }
    if (!(lower <= upper)) in.Fail("a row's lower bound exceeds its upper");
    // Rows were split when first added: add them back as they are.
    if (in.error().empty()) milp.AddRow(std::move(terms), lower, upper);
  }
  in.Expect("alternatives");
  const size_t alternatives = in.Index(kMaxSize);
  for (size_t a = 0; a < alternatives && in.error().empty(); ++a) {
    const size_t n = in.Index(kMaxSize);
    std::vector<Milp::Bound> bounds;
    for (size_t b = 0; b < n && in.error().empty(); ++b) {
      const int var = static_cast<int>(in.Index(vars));
      const double lower = in.Number(), upper = in.Number();
      if (!(lower <= upper)) in.Fail("an alternative's lower bound exceeds its upper");
      bounds.push_back({var, lower, upper});
    }
    if (in.error().empty()) milp.AddAlternative(std::move(bounds));
  }
  in.Expect("end");
  if (!in.error().empty()) return Invalid("not a MILP", in);
  return std::pair{std::move(milp), options};
}

std::string WriteMilpSolution(const MilpSolution& solution) {
  std::string out = "solution " + std::string(MilpStatusName(solution.status)) + " " +
                    Hex(solution.objective) + "\nvalues " + std::to_string(solution.values.size());
  for (double v : solution.values) out += " " + Hex(v);
  return out + "\nend\n";
}

Result<MilpSolution> ReadMilpSolution(std::string_view text, size_t vars) {
  Tokens in(text);
  MilpSolution out;
  in.Expect("solution");
  const std::string_view status = in.Next();
  bool known = false;
  for (MilpStatus s : {MilpStatus::kOptimal, MilpStatus::kFeasible, MilpStatus::kInfeasible,
                       MilpStatus::kNoSolution}) {
    if (status == MilpStatusName(s)) {
      out.status = s;
      known = true;
    }
  }
  if (!known) in.Fail("an unknown status");
  out.objective = in.Number();
  in.Expect("values");
  const size_t n = in.Index(vars + 1);
  if (n != 0 && n != vars) in.Fail("another number of values than variables");
  for (size_t i = 0; i < n && in.error().empty(); ++i) out.values.push_back(in.Number());
  in.Expect("end");
  if (!in.error().empty()) return Invalid("not a MILP solution", in);
  return out;
}

}  // namespace pipescale::optimizer
