// The progress of a profiling run on stderr: one line redrawn in place on a terminal, or a
// plain line per batch size measured otherwise (logs, CI). Pure: writes to the stream given.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "profile/points.h"

namespace pipescale::profile {

struct Progress {
  size_t size_index = 0;  // of the batch size being measured, from 0
  size_t sizes = 0;       // batch sizes in the run
  int batch = 1;
  int done = 0;                             // requests answered at this size, warm-up included
  int total = 0;                            // warm-up and measured requests per size
  double elapsed_s = 0;                     // since the run started
  const MeasuredBatch* finished = nullptr;  // set on the last update of a size
};

enum class ProgressStyle { kNone, kLines, kBar };

class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& out, ProgressStyle style) : out_(out), style_(style) {}

  // The bar is redrawn at most ten times a second of the run, and when a size is done.
  void Update(const Progress& progress);
  // Clears the bar's line, so that what follows starts on an empty one.
  void Finish();

 private:
  std::ostream& out_;
  ProgressStyle style_;
  double drawn_at_s_ = -1;
  bool drawn_ = false;
};

}  // namespace pipescale::profile
