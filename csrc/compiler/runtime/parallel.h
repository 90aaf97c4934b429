// Host-side parallel loops over the launcher a caller passes in (see
// codegen/abi.h): the format conversions split their row passes with it, so
// they run on torch's threads in the extension and on a test pool in the C++
// tests, and link no threading runtime of their own.
#pragma once

#include <cstdint>

#include "codegen/abi.h"

namespace sparsetir {

// Calls body(begin, end) on chunks of [0, n) of at least `grain` iterations,
// through `launcher` (nullptr: serially on the calling thread). The body must
// not throw: a launcher is a C interface, so an exception cannot cross it;
// callers check their input before the parallel pass.
template <typename Body>
void ParallelFor(const SparsetirLauncher* launcher, int64_t n, int64_t grain, const Body& body) {
  if (n <= 0) return;
  if (launcher == nullptr || launcher->num_threads <= 1 || n <= grain) {
    body(int64_t{0}, n);
    return;
  }
  SparsetirTask task = [](void* closure, int64_t begin, int64_t end) {
    (*static_cast<const Body*>(closure))(begin, end);
  };
  launcher->parallel_for(launcher->ctx, 0, n, grain, task, const_cast<Body*>(&body));
}

}  // namespace sparsetir
