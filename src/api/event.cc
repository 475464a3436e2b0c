#include "api/event.h"

#include "common/time.h"

namespace pipescale::api {
namespace {

// `text` cut to at most `max_bytes`, at a character's start: a cut inside a UTF-8 sequence would
// leave JSON that cannot be written.
std::string Cut(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

nlohmann::json BuildEvent(const ObjectMeta& involved, const EventRecord& event) {
  const std::string& ns = involved.namespace_name;
  const std::string at = FormatRfc3339(event.now);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"generateName", involved.name + "."}, {"namespace", ns}}},
          {"involvedObject",
           {{"apiVersion", "pipescale.io/v1alpha1"},
            {"kind", "InferencePipeline"},
            {"name", involved.name},
            {"namespace", ns},
            {"uid", involved.uid}}},
          {"type", event.type},
          {"reason", event.reason},
          {"message", Cut(event.message, kMaxEventMessageBytes)},
          {"source", {{"component", "pipescale-operator"}}},
          {"firstTimestamp", at},
          {"lastTimestamp", at},
          {"count", 1}};
}

}  // namespace pipescale::api
