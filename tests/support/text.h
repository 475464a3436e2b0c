// Editing a test's text (a pipeline's YAML, a template's placeholders, a request body): the
// tests' one way of doing it. A `from` the text does not hold is the test's own mistake (a typo,
// a template changed under it) and fails the test by name, where std::string::replace at npos
// would throw and an edit that silently changed nothing would test the unedited text.
// Header-only, so unit and integration tests share it without a library.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace pipescale::testing {

// `text` with the first `from` replaced by `to`.
inline std::string ReplaceFirst(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no \"" << from << "\" to replace in:\n" << text;
    return text;
  }
  return text.replace(at, from.size(), to);
}

// `text` with every `from` replaced by `to`, left to right (a `to` that holds `from` is not
// replaced again): a template's placeholder wherever it appears.
inline std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no \"" << from << "\" to replace in:\n" << text;
    return text;
  }
  for (; at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace pipescale::testing
