// check.h — CHECK for the native test drivers: a failed condition is counted in g_failures and
// printed with its place and reason to stderr; the driver's main() turns g_failures into its
// exit status. Header-only: every driver is a program of its own.
#pragma once

#include <stdio.h>

inline int g_failures = 0;

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      ++g_failures;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
    }                                                                 \
  } while (0)
