#include "routing/body.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/check.h"
#include "routing/binary.h"

namespace pipescale::routing {
namespace {

using nlohmann::json;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A recursive-descent reader of the JSON grammar (RFC 8259) that only moves over the text.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {}

  size_t pos() const { return pos_; }
  bool too_deep() const { return too_deep_; }
  void Space() {
    while (pos_ < t_.size() && IsSpace(t_[pos_])) ++pos_;
  }
  bool AtEnd() {
    Space();
    return pos_ == t_.size();
  }
  bool Peek(char c) {
    Space();
    return pos_ < t_.size() && t_[pos_] == c;
  }
  bool Take(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }

  // One value of any kind, `depth` containers deep.
  bool Value(int depth) {
    Space();
    if (pos_ >= t_.size()) return false;
    const char c = t_[pos_];
    if (c == '{' || c == '[') {
      too_deep_ = too_deep_ || depth >= kMaxNesting;
      return !too_deep_ && Container(depth + 1);
    }
    if (c == '"') return String();
    if (c == '-' || IsDigit(c)) return Number();
    return Word("true") || Word("false") || Word("null");
  }

  // A string token, the scanner on its opening quote.
  bool String() {
    if (pos_ >= t_.size() || t_[pos_] != '"') return false;
    for (++pos_; pos_ < t_.size(); ++pos_) {
      const char c = t_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20) return false;
      if (byte >= 0x80) {
        if (!Utf8()) return false;
        continue;
      }
      if (c != '\\') continue;
      if (++pos_ >= t_.size()) return false;
      const char e = t_[pos_];
      if (e == 'u') {
        if (!Escape()) return false;
      } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        return false;
      }
    }
    return false;
  }

 private:
  // The four hex digits after "\u" at `at` (on the 'u'), or -1.
  long Hex4(size_t at) const {
    if (at + 4 >= t_.size() || !std::all_of(&t_[at + 1], &t_[at + 5], IsHex)) return -1;
    long unit = 0;
    std::from_chars(&t_[at + 1], &t_[at + 5], unit, 16);
    return unit;
  }

  // A "\u" escape, the scanner on its 'u' and left on its last digit. UTF-16 surrogates come in
  // pairs, a high one escaped right before a low one: a lone one names no character (the
  // parsers the router's peers use refuse it, so it would come back as their error).
  bool Escape() {
    const long unit = Hex4(pos_);
    if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      const bool pair = t_.substr(pos_ + 5, 2) == "\\u";
      const long low = pair ? Hex4(pos_ + 6) : -1;
      if (low < 0xDC00 || low > 0xDFFF) return false;
      pos_ += 6;
    }
    pos_ += 4;
    return true;
  }

  // One UTF-8 sequence (RFC 3629: shortest form, no surrogates, at most U+10FFFF) starting at
  // the scanner, left on its last byte.
  bool Utf8() {
    const auto at = [&](size_t i) {
      return pos_ + i < t_.size() ? static_cast<unsigned char>(t_[pos_ + i]) : 0;
    };
    const unsigned char b = at(0);
    const int length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
    if (length == 0 || b > 0xF4) return false;
    // The second byte's range narrows where the lead byte allows overlong or out-of-range forms.
    const unsigned char low = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
    const unsigned char high = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
    if (at(1) < low || at(1) > high) return false;
    for (int i = 2; i < length; ++i) {
      if (at(i) < 0x80 || at(i) > 0xBF) return false;
    }
    pos_ += length - 1;
    return true;
  }

  // A number token (RFC 8259's grammar), read through a local pointer: a tensor's data is
  // mostly numbers, and this loop is most of what a large request costs the router.
  bool Number() {
    const char* p = t_.data() + pos_;
    const char* const end = t_.data() + t_.size();
    const auto digits = [&] {
      const char* from = p;
      while (p < end && IsDigit(*p)) ++p;
      return p > from;
    };
    if (*p == '-') ++p;
    if (p < end && *p == '0') {
      ++p;
    } else if (!digits()) {
      return Fail(p);
    }
    if (p < end && *p == '.' && (++p, !digits())) return Fail(p);
    if (p < end && (*p == 'e' || *p == 'E')) {
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (!digits()) return Fail(p);
    }
    pos_ = static_cast<size_t>(p - t_.data());
    return true;
  }

  bool Fail(const char* at) {
    pos_ = static_cast<size_t>(at - t_.data());
    return false;
  }

  bool Word(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  // An object or an array whose opening bracket the scanner is on.
  bool Container(int depth) {
    const bool object = t_[pos_] == '{';
    const char close = object ? '}' : ']';
    ++pos_;
    if (Take(close)) return true;
    do {
      if (object && !(Peek('"') && String() && Take(':'))) return false;
      if (!Element(depth)) return false;
    } while (Take(','));
    return Take(close);
  }

  // A container's value: a number straight away (most of a tensor), anything else by Value.
  bool Element(int depth) {
    Space();
    if (pos_ < t_.size() && (IsDigit(t_[pos_]) || t_[pos_] == '-')) return Number();
    return Value(depth);
  }

  std::string_view t_;
  size_t pos_ = 0;
  bool too_deep_ = false;
};

Error Malformed(const std::string& what, size_t at) {
  return Error{ErrorKind::kInvalid, what + " (at byte " + std::to_string(at) + ")"};
}

Error NotJson(const Scanner& s) {
  if (s.too_deep()) {
    return Error{ErrorKind::kInvalid, "is nested deeper than " + std::to_string(kMaxNesting)};
  }
  return Malformed("is not JSON", s.pos());
}

// The items of the one container `text` holds: members of an object, elements of an array.
template <typename Item, typename OnItem>
Result<std::vector<Item>> Scan(std::string_view text, char open, OnItem on_item) {
  const char close = open == '{' ? '}' : ']';
  const std::string kind = open == '{' ? "a JSON object" : "a JSON array";
  Scanner s(text);
  if (!s.Take(open)) {
    Status valid = CheckJson(text);
    if (!valid) return valid.error();
    return Error{ErrorKind::kInvalid, "is not " + kind};
  }
  std::vector<Item> items;
  if (!s.Take(close)) {
    do {
      if (!on_item(s, items)) return NotJson(s);
    } while (s.Take(','));
    if (!s.Take(close)) return NotJson(s);
  }
  if (!s.AtEnd()) return Malformed("holds more than one JSON value", s.pos());
  return items;
}

// The value's text from where the scanner stands (after whitespace) to where it ends.
bool ValueSpan(Scanner& s, std::string_view text, std::string_view& out) {
  s.Space();
  const size_t from = s.pos();
  if (!s.Value(1)) return false;
  out = text.substr(from, s.pos() - from);
  return true;
}

void Append(std::string& list, std::string_view key, std::string_view value) {
  if (!list.empty()) list += ',';
  list += '"';
  list += key;
  list += "\":";
  list += value;
}

// In checked text: the index of the closing quote of the string opening at `at`.
size_t StringEnd(std::string_view t, size_t at) {
  for (size_t i = at + 1; i < t.size(); ++i) {
    if (t[i] == '\\') {
      ++i;
    } else if (t[i] == '"') {
      return i;
    }
  }
  return t.size();
}

size_t SkipSpace(std::string_view t, size_t at) {
  while (at < t.size() && IsSpace(t[at])) ++at;
  return at;
}

#if defined(__SSE2__)
// The 16 bytes at `p` as a mask: bit i set where p[i] is one of `C...`.
template <char... C>
unsigned Matches(const char* p) {
  const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return (static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(C)))) | ...);
}
#endif

// The index of the first byte at or after `from` that is one of `C...`, or t.size(). Sixteen bytes
// a step where SSE2 is there (every x86-64): a tensor's numbers hold none of the bytes looked for.
template <char... C>
size_t NextOf(std::string_view t, size_t from) {
#if defined(__SSE2__)
  for (; from + 16 <= t.size(); from += 16) {
    const unsigned mask = Matches<C...>(t.data() + from);
    if (mask != 0) return from + static_cast<size_t>(std::countr_zero(mask));
  }
#endif
  while (from < t.size() && ((t[from] != C) && ...)) ++from;
  return from;
}

// In checked text: where the value starting at `at` ends.
size_t ValueEnd(std::string_view t, size_t at) {
  if (t[at] == '"') return StringEnd(t, at) + 1;
  if (t[at] != '{' && t[at] != '[') return NextOf<',', ']', '}', ' ', '\t', '\n', '\r'>(t, at);
  int depth = 0;
  for (size_t i = at; i < t.size(); i = NextOf<'"', '[', ']', '{', '}'>(t, i + 1)) {
    if (t[i] == '"') {
      i = StringEnd(t, i);
    } else if (t[i] == '[' || t[i] == '{') {
      ++depth;
    } else if (--depth == 0) {
      return i + 1;
    }
  }
  return t.size();
}

// Bits set in a 16-bit mask, by table: without -mpopcnt std::popcount is a libgcc call, a tenth
// of a large request's cost when it was one per 16 bytes.
int Bits16(unsigned mask) {
  static constexpr auto kBits = [] {
    std::array<std::uint8_t, 256> bits{};
    for (unsigned i = 0; i < 256; ++i) bits[i] = static_cast<std::uint8_t>(std::popcount(i));
    return bits;
  }();
  return kBits[mask & 0xFF] + kBits[(mask >> 8) & 0xFF];
}

// From `from`: the index of the next byte CountScalars reads ('"', '[', '{' or 'n'), the commas
// before it added to `commas`.
size_t NextCounted(std::string_view t, size_t from, long& commas) {
#if defined(__SSE2__)
  for (; from + 16 <= t.size(); from += 16) {
    const unsigned stop = Matches<'"', '[', '{', 'n'>(t.data() + from);
    const unsigned comma = Matches<','>(t.data() + from);
    if (stop != 0) {
      const int k = std::countr_zero(stop);
      commas += Bits16(comma & ((1U << k) - 1));
      return from + static_cast<size_t>(k);
    }
    commas += Bits16(comma);
  }
#endif
  for (; from < t.size(); ++from) {
    const char c = t[from];
    if (c == '"' || c == '[' || c == '{' || c == 'n') return from;
    commas += c == ',' ? 1 : 0;
  }
  return from;
}

// Calls `item(from)` at each item of the checked container `text` and moves on from where it
// says the item ends.
template <typename OnItem>
void EachItem(std::string_view text, OnItem item) {
  size_t i = SkipSpace(text, 0);
  PIPESCALE_CHECK(i < text.size() && (text[i] == '{' || text[i] == '['));
  const char close = text[i] == '{' ? '}' : ']';
  for (i = SkipSpace(text, i + 1); i < text.size() && text[i] != close;) {
    i = SkipSpace(text, item(i));
    if (i < text.size() && text[i] == ',') i = SkipSpace(text, i + 1);
  }
}

}  // namespace

Status CheckJson(std::string_view text) {
  Scanner s(text);
  if (!s.Value(0)) return NotJson(s);
  if (!s.AtEnd()) return Malformed("holds more than one JSON value", s.pos());
  return Done{};
}

Result<std::vector<Member>> ScanObject(std::string_view text) {
  return Scan<Member>(text, '{', [&](Scanner& s, std::vector<Member>& members) {
    if (!s.Peek('"')) return false;
    const size_t from = s.pos();
    if (!s.String()) return false;
    Member m{text.substr(from + 1, s.pos() - from - 2), {}};
    if (!s.Take(':') || !ValueSpan(s, text, m.value)) return false;
    members.push_back(m);
    return true;
  });
}

Result<std::vector<std::string_view>> ScanArray(std::string_view text) {
  return Scan<std::string_view>(text, '[', [&](Scanner& s, std::vector<std::string_view>& items) {
    std::string_view item;
    if (!ValueSpan(s, text, item)) return false;
    items.push_back(item);
    return true;
  });
}

std::vector<Member> MembersOf(std::string_view checked_object) {
  std::vector<Member> members;
  EachItem(checked_object, [&](size_t at) {
    const size_t key_end = StringEnd(checked_object, at);
    const size_t from = SkipSpace(checked_object, SkipSpace(checked_object, key_end + 1) + 1);
    const size_t end = ValueEnd(checked_object, from);
    members.push_back(
        {checked_object.substr(at + 1, key_end - at - 1), checked_object.substr(from, end - from)});
    return end;
  });
  return members;
}

std::vector<std::string_view> ElementsOf(std::string_view checked_array) {
  std::vector<std::string_view> items;
  EachItem(checked_array, [&](size_t at) {
    const size_t end = ValueEnd(checked_array, at);
    items.push_back(checked_array.substr(at, end - at));
    return end;
  });
  return items;
}

// Every array's scalars are its commas plus one when it is not empty, less its nested arrays.
long CountScalars(std::string_view checked) {
  const size_t first = SkipSpace(checked, 0);
  if (first == checked.size() || checked[first] == '{' || checked[first] == 'n') return -1;
  if (checked[first] != '[') return 1;
  long commas = 0;
  long arrays = 0;
  long empty = 0;
  for (size_t i = NextCounted(checked, first, commas); i < checked.size();
       i = NextCounted(checked, i + 1, commas)) {
    if (checked[i] == '"') {
      i = StringEnd(checked, i);
    } else if (checked[i] == '[') {
      ++arrays;
      const size_t next = SkipSpace(checked, i + 1);
      if (next < checked.size() && checked[next] == ']') ++empty;
    } else {
      return -1;  // an object or null
    }
  }
  return commas + (arrays - empty) - (arrays - 1);
}

std::string_view Find(const std::vector<Member>& members, std::string_view key) {
  const auto last =
      std::find_if(members.rbegin(), members.rend(), [&](const Member& m) { return m.key == key; });
  return last == members.rend() ? std::string_view() : last->value;
}

std::string Wire::Joined() const {
  std::string out;
  out.reserve(JsonBytes() + binary.size());
  for (std::string_view piece : Pieces()) out += piece;
  return out;
}

Wire Body::Render(const std::vector<std::pair<std::string_view, std::string>>& set) const {
  Wire wire{.inputs = inputs, .binary = binary};
  std::string& rest = wire.rest;
  rest.reserve(id.size() + others.size() + parameters.size() + 96);
  if (!id.empty()) (rest += ",\"id\":") += id;
  if (!others.empty()) (rest += ',') += others;
  (rest += ",\"parameters\":{") += parameters;
  bool first = parameters.empty();
  const auto add = [&](std::string_view key, std::string_view value) {
    ((((rest += first ? "\"" : ",\"") += key) += "\":") += value);
    first = false;
  };
  for (const auto& [key, value] : set) add(key, value);
  if (binary_outputs) add(kBinaryOutputParameter, "true");
  rest += "}}";
  return wire;
}

Result<Body> ClientBody(const std::vector<Member>& request, std::string_view binary) {
  Body body{.binary = binary, .binary_outputs = !binary.empty()};
  for (const Member& m : request) {
    if (m.key == "inputs") {
      body.inputs = m.value;
    } else if (m.key == "id") {
      body.id = m.value;
    } else if (m.key != "parameters") {
      Append(body.others, m.key, m.value);
    }
  }
  if (body.inputs.empty()) return Error{ErrorKind::kInvalid, "inputs: is required"};
  const std::string_view parameters = Find(request, "parameters");
  if (parameters.empty()) return body;
  if (parameters.front() != '{') return Error{ErrorKind::kInvalid, "parameters: must be an object"};
  for (const Member& m : MembersOf(parameters)) {
    if (m.key == kBinaryOutputParameter) {
      body.binary_outputs = body.binary_outputs || m.value == "true";
    } else if (m.key != kDeadlineParameter && m.key != kPathParameter) {
      Append(body.parameters, m.key, m.value);
    }
  }
  return body;
}

Result<Answer> ReadAnswer(std::string_view body, std::string_view header_length) {
  auto split = Split(body, header_length);
  if (!split) return Error{ErrorKind::kInvalid, "its answer's " + split.error().message};
  auto members = ScanObject(split->json);
  if (!members) return Error{ErrorKind::kInvalid, "its answer " + members.error().message};
  Answer answer;
  answer.outputs = Find(*members, "outputs");
  if (!answer.outputs.empty() && answer.outputs.front() != '[') {
    return Error{ErrorKind::kInvalid, "its outputs are not an array"};
  }
  if (answer.outputs.find_first_not_of("[ \t\r\n]") == std::string_view::npos) answer.outputs = {};
  if (!split->binary.empty() || !header_length.empty()) {
    Status fits = CheckBinaryPart(answer.outputs.empty() ? "[]" : answer.outputs, split->binary,
                                  "its outputs");
    if (!fits) return fits.error();
    answer.binary = split->binary;
  }
  const std::string_view parameters = Find(*members, "parameters");
  answer.parameters = json::object();
  if (parameters.empty()) return answer;
  if (parameters.front() != '{')
    return Error{ErrorKind::kInvalid, "its parameters are not an object"};
  // Only the router's own are decoded, each small: a model's other parameters stay text, which
  // the walk never reads (decoding them all was 8% of the router's instructions at 1 KB).
  for (const Member& m : MembersOf(parameters)) {
    if (!m.key.starts_with(kRouterParameterPrefix)) continue;
    json value = json::parse(m.value, nullptr, false);
    if (!value.is_discarded()) answer.parameters[std::string(m.key)] = std::move(value);
  }
  return answer;
}

Body NextBody(const Answer& answer, const Body& previous) {
  Body next{.id = previous.id, .binary_outputs = previous.binary_outputs};
  if (answer.outputs.empty()) {
    next.inputs = previous.inputs;
    next.binary = previous.binary;
  } else {
    next.inputs = answer.outputs;
    next.binary = answer.binary;
  }
  return next;
}

Result<std::vector<std::string>> NamedOutputs(std::string_view task, std::string_view outputs) {
  std::vector<std::string> named;
  if (outputs.empty()) return named;
  const std::vector<std::string_view> items = ElementsOf(outputs);
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].front() != '{') {
      return Error{ErrorKind::kInvalid, "outputs[" + std::to_string(i) + "] is not an object"};
    }
    const std::vector<Member> members = MembersOf(items[i]);
    const std::string_view name = Find(members, "name");
    std::string out = R"({"name":")" + std::string(task) + '/';
    out += name.size() >= 2 && name.front() == '"' ? name.substr(1) : "output\"";
    for (const Member& m : members) {
      if (m.key != "name") Append(out, m.key, m.value);
    }
    named.push_back(out + '}');
  }
  return named;
}

std::string Quoted(std::string_view text) { return json(std::string(text)).dump(); }

}  // namespace pipescale::routing
