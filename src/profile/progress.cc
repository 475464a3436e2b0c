#include "profile/progress.h"

#include <cmath>

#include "common/strings.h"

namespace pipescale::profile {
namespace {

constexpr int kBarWidth = 24;
constexpr double kRedrawSeconds = 0.1;

std::string Seconds(double s) {
  if (s < 60) return StrFormat("%.0f s", s);
  return StrFormat("%.0f min %02.0f s", std::floor(s / 60), std::fmod(s, 60));
}

// The bar's line for `p`, from the start of the terminal's line.
std::string Bar(const Progress& p) {
  const double all = static_cast<double>(p.sizes) * p.total;
  const double done = static_cast<double>(p.size_index) * p.total + p.done;
  const double share = all > 0 ? done / all : 1;
  const int filled = static_cast<int>(share * kBarWidth);
  std::string line =
      StrFormat("\r[%s%s] batch size %d (%zu/%zu): %d/%d requests, %s",
                std::string(filled, '#').c_str(), std::string(kBarWidth - filled, '.').c_str(),
                p.batch, p.size_index + 1, p.sizes, p.done, p.total, Seconds(p.elapsed_s).c_str());
  // Larger batches take longer: a lower bound, said as such.
  if (done > 0 && share < 1)
    line += ", at least " + Seconds(p.elapsed_s / share - p.elapsed_s) + " left";
  return line + "\033[K";
}

}  // namespace

void ProgressPrinter::Update(const Progress& p) {
  if (style_ == ProgressStyle::kNone) return;
  if (style_ == ProgressStyle::kLines) {
    if (p.finished == nullptr) return;
    const Summary& s = p.finished->summary;
    out_ << StrFormat(
        "batch size %d (%zu/%zu): %d requests, p50 %.3f ms, mean %.3f ms, p99 %.3f ms\n", p.batch,
        p.size_index + 1, p.sizes, s.count, s.p50_ms, s.mean_ms, s.p99_ms);
    out_.flush();
    return;
  }
  if (p.finished == nullptr && drawn_ && p.elapsed_s - drawn_at_s_ < kRedrawSeconds) return;
  out_ << Bar(p);
  out_.flush();
  drawn_ = true;
  drawn_at_s_ = p.elapsed_s;
}

void ProgressPrinter::Finish() {
  if (style_ != ProgressStyle::kBar || !drawn_) return;
  out_ << "\r\033[K";
  out_.flush();
  drawn_ = false;
}

}  // namespace pipescale::profile
