// PIPESCALE_CHECK: a broken invariant is a bug, so it stops the process in every build type.
// Never use it on input from outside; that is validated and reported as a Result.
#pragma once

#include <cstdio>
#include <cstdlib>

#define PIPESCALE_CHECK(cond)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (false)
