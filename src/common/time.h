// Timestamps as Kubernetes writes them: RFC 3339 in UTC (metav1.Time, and metav1.MicroTime with
// microseconds), for conditions, events, leases, pod status and log lines.
#pragma once

#include <string>

namespace pipescale {

// `unix_seconds` as "2026-11-27T09:48:33Z", with `fraction_digits` (0, 3 or 6) digits of the
// second after a '.' when asked: 3 for log lines, 6 for a MicroTime.
std::string FormatRfc3339(double unix_seconds, int fraction_digits = 0);

}  // namespace pipescale
