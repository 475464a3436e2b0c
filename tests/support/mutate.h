// Byte-level mutations of a text for the parsers' fuzz tests: bytes replaced, runs cut or
// duplicated, the tail dropped.
#pragma once

#include <random>
#include <string>

namespace pipescale::testing {

// Up to `max_edits` edits of `s`; `byte()` draws each replacement byte.
template <typename Byte>
std::string Mutate(std::string s, std::mt19937& rng, int max_edits, Byte byte) {
  const int edits = 1 + static_cast<int>(rng() % max_edits);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng() % s.size();
    switch (rng() % 4) {
      case 0:
        s[at] = byte();
        break;
      case 1:
        s.erase(at, 1 + rng() % 8);
        break;
      case 2:
        s.insert(at, s.substr(at, 1 + rng() % 16));
        break;
      default:
        s.resize(at);
        break;
    }
  }
  return s;
}

}  // namespace pipescale::testing
