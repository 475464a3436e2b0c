#include "profile/yaml_edit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>

#include "api/pipeline_parse.h"
#include "common/strings.h"

namespace pipescale::profile {
namespace {

constexpr size_t kNone = std::string_view::npos;

Error Cannot(const std::string& why) {
  return Error{ErrorKind::kInvalid, "cannot edit the document in place: " + why};
}

// --- Lines of the text ---

size_t LineStart(std::string_view t, size_t pos) {
  if (pos == 0) return 0;
  const size_t nl = t.rfind('\n', pos - 1);
  return nl == kNone ? 0 : nl + 1;
}

// Where the line holding `pos` ends, before its "\n" or "\r\n".
size_t LineEnd(std::string_view t, size_t pos) {
  size_t end = std::min(t.find('\n', pos), t.size());
  if (end > pos && t[end - 1] == '\r') --end;
  return end;
}

size_t NextLine(std::string_view t, size_t pos) {
  return std::min(t.find('\n', pos), t.size()) + 1;
}

size_t Indent(std::string_view t, size_t line_start) {
  size_t i = line_start;
  while (i < t.size() && t[i] == ' ') ++i;
  return i - line_start;
}

// A line with something other than spaces and a comment.
bool IsContent(std::string_view t, size_t line_start) {
  const size_t i = line_start + Indent(t, line_start);
  return i < LineEnd(t, line_start) && t[i] != '#';
}

// Whether a quote at `i` opens a quoted scalar: a quote inside a plain scalar (it's) does not.
bool OpensQuote(std::string_view t, size_t i) {
  if (i == 0) return true;
  const char before = t[i - 1];
  return before == ' ' || before == '\n' || before == '[' || before == '{' || before == ',' ||
         before == ':' || before == '-';
}

// The index of the quote that closes the quoted scalar opening at `i`, or kNone.
size_t CloseQuote(std::string_view t, size_t i) {
  const char quote = t[i];
  for (size_t j = i + 1; j < t.size(); ++j) {
    if (quote == '"' && t[j] == '\\') {
      ++j;
    } else if (t[j] == quote) {
      if (quote == '\'' && j + 1 < t.size() && t[j + 1] == '\'') {
        ++j;
        continue;
      }
      return j;
    }
  }
  return kNone;
}

// The end of the line's content: before a trailing comment and the spaces ahead of it.
size_t ContentEnd(std::string_view t, size_t line_start) {
  const size_t end = LineEnd(t, line_start);
  size_t content = line_start;
  for (size_t i = line_start; i < end; ++i) {
    if ((t[i] == '"' || t[i] == '\'') && OpensQuote(t, i)) {
      i = std::min(CloseQuote(t, i), end - 1);
    } else if (t[i] == '#' && (i == line_start || t[i - 1] == ' ')) {
      break;
    }
    if (t[i] != ' ') content = i + 1;
  }
  return content;
}

// The end (one past the bracket) of the flow collection opening at `pos`, or kNone.
size_t FlowEnd(std::string_view t, size_t pos) {
  int depth = 0;
  for (size_t i = pos; i < t.size(); ++i) {
    const char c = t[i];
    if ((c == '"' || c == '\'') && OpensQuote(t, i)) {
      i = CloseQuote(t, i);
      if (i == kNone) return kNone;
    } else if (c == '#' && i > 0 && (t[i - 1] == ' ' || t[i - 1] == '\n')) {
      i = LineEnd(t, i);
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      return i + 1;
    }
  }
  return kNone;
}

// The start of the last content line of the block that begins on the line of `pos`: the lines
// after it that are more indented than `parent_indent`, up to the first that is not.
size_t LastBlockLine(std::string_view t, size_t pos, size_t parent_indent) {
  size_t last = LineStart(t, pos);
  for (size_t line = NextLine(t, pos); line < t.size(); line = NextLine(t, line)) {
    if (!IsContent(t, line)) continue;
    if (Indent(t, line) <= parent_indent) break;
    last = line;
  }
  return last;
}

// --- The nodes ---

size_t Pos(const YAML::Node& node) { return static_cast<size_t>(node.Mark().pos); }
size_t Column(std::string_view t, size_t pos) { return pos - LineStart(t, pos); }

// The item of a sequence of maps whose `key` is `value`.
std::optional<YAML::Node> Named(const YAML::Node& seq, const char* key, const std::string& value) {
  if (!seq.IsSequence()) return std::nullopt;
  for (const YAML::Node& item : seq) {
    if (item.IsMap() && item[key].IsScalar() && item[key].Scalar() == value) return item;
  }
  return std::nullopt;
}

struct Found {
  YAML::Node profiles;
  std::optional<YAML::Node> profile;
};

Result<Found> FindProfiles(const YAML::Node& root, const Target& target) {
  const auto task = Named(root["spec"]["tasks"], "name", target.task);
  const auto variant = task ? Named((*task)["variants"], "name", target.variant) : std::nullopt;
  if (!variant || !(*variant)["profiles"].IsSequence()) {
    return Cannot("no profiles of variant " + QuoteUserText(target.variant) + " of task " +
                  QuoteUserText(target.task) + " in the document");
  }
  const YAML::Node profiles = (*variant)["profiles"];
  return Found{profiles, Named(profiles, "hardwareClass", target.hardware_class)};
}

std::string NewlineOf(std::string_view t) { return t.find("\r\n") != kNone ? "\r\n" : "\n"; }

bool IsJson(std::string_view t) {
  const size_t first = t.find_first_not_of(" \t\r\n");
  return first != kNone && (t[first] == '{' || t[first] == '[');
}

struct Edit {
  size_t from = 0, to = 0;
  std::string text;
};

}  // namespace

namespace {

std::string Line(std::string_view t, size_t pos) {
  return "line " + std::to_string(std::count(t.begin(), t.begin() + pos, '\n') + 1);
}

// Only spaces, line breaks and comments may stand between a key's ':' and its value: an anchor
// (&a) or a tag (!!map) there would be lost or shared.
bool OnlySpaceBetween(std::string_view t, size_t from, size_t to) {
  bool comment = false;
  for (size_t i = from; i < to; ++i) {
    if (t[i] == '\n') comment = false;
    if (comment || t[i] == ' ' || t[i] == '\r' || t[i] == '\n') continue;
    if (t[i] != '#') return false;
    comment = true;
  }
  return true;
}

// The ':' after the key at `key`, or kNone.
size_t ColonAfterKey(std::string_view t, size_t key) {
  size_t i = key;
  if (t[i] == '"' || t[i] == '\'') {
    i = CloseQuote(t, i);
    if (i == kNone) return kNone;
  }
  const size_t colon = t.find(':', i);
  return colon;
}

Result<Edit> ReplaceValue(std::string_view t, const YAML::Node& key, const YAML::Node& value,
                          const Latency& latency) {
  const size_t k = Pos(key), v = Pos(value);
  const size_t colon = v > k ? ColonAfterKey(t, k) : kNone;
  const bool decorated = v < t.size() && (t[v] == '&' || t[v] == '!' || t[v] == '*');
  if (colon == kNone || colon >= v || decorated || !OnlySpaceBetween(t, colon + 1, v)) {
    return Cannot("latencyMs at " + Line(t, k) +
                  " is shared through a YAML anchor or alias, or tagged; write it by hand");
  }
  TextStyle style{
      .json = IsJson(t), .column = static_cast<int>(Column(t, v)), .newline = NewlineOf(t)};
  if (value.Style() == YAML::EmitterStyle::Flow) {
    const size_t end = t[v] == '{' ? FlowEnd(t, v) : kNone;
    if (end == kNone) return Cannot("latencyMs at " + Line(t, k) + " is not a flow mapping");
    return Edit{v, end, LatencyText(latency, style)};
  }
  style.block = true;
  const size_t end = ContentEnd(t, LastBlockLine(t, v, Column(t, k)));
  return Edit{v, std::max(end, v), LatencyText(latency, style)};
}

// A profile as one flow mapping, starting at `column`.
std::string FlowProfile(std::string_view t, const std::string& hardware_class,
                        const Latency& latency, size_t column) {
  const bool json = IsJson(t);
  const std::string head = json ? R"({"hardwareClass": ")" + hardware_class + R"(", "latencyMs": )"
                                : "{hardwareClass: " + hardware_class + ", latencyMs: ";
  const TextStyle style{
      .json = json, .column = static_cast<int>(column + head.size()), .newline = NewlineOf(t)};
  return head + LatencyText(latency, style) + "}";
}

// After the last item of a flow sequence: ", {hardwareClass: ..., latencyMs: ...}".
Result<Edit> AppendToFlow(std::string_view t, const YAML::Node& profiles,
                          const std::string& hardware_class, const Latency& latency) {
  size_t at = Pos(profiles) + 1;
  std::string separator;
  if (profiles.size() > 0) {
    const YAML::Node last = profiles[profiles.size() - 1];
    at = last.IsMap() && t[Pos(last)] == '{' ? FlowEnd(t, Pos(last)) : kNone;
    separator = ", ";
  }
  if (at == kNone) return Cannot("the profiles at " + Line(t, Pos(profiles)) + " are not maps");
  return Edit{
      at, at,
      separator + FlowProfile(t, hardware_class, latency, Column(t, at) + separator.size())};
}

// A new item after the last of a block sequence, in the style of that item.
Result<Edit> AppendToBlock(std::string_view t, const YAML::Node& profiles,
                           const std::string& hardware_class, const Latency& latency) {
  const size_t dash = Column(t, Pos(profiles));
  const YAML::Node last = profiles[profiles.size() - 1];
  if (t[Pos(profiles)] != '-' || !last.IsMap()) {
    return Cannot("the profiles at " + Line(t, Pos(profiles)) + " are not a list of maps");
  }
  const std::string nl = NewlineOf(t), indent(dash, ' ');
  if (last.Style() == YAML::EmitterStyle::Flow) {
    const size_t end = t[Pos(last)] == '{' ? FlowEnd(t, Pos(last)) : kNone;
    if (end == kNone) return Cannot("the profile at " + Line(t, Pos(last)) + " is not a map");
    const size_t at = LineEnd(t, end - 1);
    return Edit{at, at, nl + indent + "- " + FlowProfile(t, hardware_class, latency, dash + 2)};
  }
  const size_t at = LineEnd(t, LastBlockLine(t, Pos(last), dash));
  const TextStyle style{.block = true, .column = static_cast<int>(dash + 4), .newline = nl};
  return Edit{at, at,
              nl + indent + "- hardwareClass: " + hardware_class + nl + indent +
                  "  latencyMs:" + nl + indent + "    " + LatencyText(latency, style)};
}

Result<Edit> MakeEdit(std::string_view t, const Target& target, const Latency& latency) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(t));
  } catch (const YAML::Exception& e) {
    return Cannot("it is not YAML: " + EscapeUserText(e.what(), 200));
  }
  auto found = FindProfiles(root, target);
  if (!found) return found.error();
  if (found->profile) {
    for (const auto& kv : *found->profile) {
      if (kv.first.IsScalar() && kv.first.Scalar() == "latencyMs") {
        return ReplaceValue(t, kv.first, kv.second, latency);
      }
    }
    return Cannot("the profile has no latencyMs");
  }
  if (found->profiles.Style() == YAML::EmitterStyle::Flow) {
    return AppendToFlow(t, found->profiles, target.hardware_class, latency);
  }
  return AppendToBlock(t, found->profiles, target.hardware_class, latency);
}

model::Variant* FindVariant(model::Pipeline& pipeline, const Target& target) {
  for (model::Task& task : pipeline.spec.tasks) {
    if (task.name != target.task) continue;
    for (model::Variant& variant : task.variants) {
      if (variant.name == target.variant) return &variant;
    }
  }
  return nullptr;
}

// The index of the variant's profile for the class, or -1.
int ProfileIndex(const model::Variant& variant, const std::string& hardware_class) {
  for (size_t i = 0; i < variant.profiles.size(); ++i) {
    if (variant.profiles[i].hardware_class == hardware_class) return static_cast<int>(i);
  }
  return -1;
}

// `after` parses, holds `latency` for the target and differs from `before` nowhere else.
Status Verify(std::string_view before, std::string_view after, const Target& target,
              const Latency& latency) {
  api::ParsedPipeline old_doc = api::ParsePipeline(before);
  api::ParsedPipeline new_doc = api::ParsePipeline(after);
  if (!old_doc.pipeline) return Cannot("it is not a valid InferencePipeline");
  if (!new_doc.pipeline) {
    return Error{ErrorKind::kInvalid,
                 "the measured profile does not validate: " + new_doc.errors.front().ToString()};
  }
  model::Variant* was = FindVariant(*old_doc.pipeline, target);
  model::Variant* is = FindVariant(*new_doc.pipeline, target);
  const int old_index = was ? ProfileIndex(*was, target.hardware_class) : -1;
  const int new_index = is ? ProfileIndex(*is, target.hardware_class) : -1;
  if (new_index < 0 || is->profiles[new_index].latency.points != latency.points) {
    return Cannot("the edited document does not hold the measured profile");
  }
  if (old_index >= 0) {
    is->profiles[new_index] = was->profiles[old_index];
  } else {
    is->profiles.erase(is->profiles.begin() + new_index);
  }
  if (!(*new_doc.pipeline == *old_doc.pipeline)) {
    return Cannot("the edit would change more than the profile; write it by hand");
  }
  return Done{};
}

}  // namespace

Result<std::string> SetProfileLatency(std::string_view document, const Target& target,
                                      const Latency& latency) {
  auto edit = MakeEdit(document, target, latency);
  if (!edit) return edit.error();
  std::string out(document.substr(0, edit->from));
  out += edit->text;
  out += document.substr(edit->to);
  if (Status ok = Verify(document, out, target, latency); !ok) return ok.error();
  return out;
}

}  // namespace pipescale::profile
