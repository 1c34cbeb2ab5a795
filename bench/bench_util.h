// bench_util.h - what the CPU per-layer benchmark programs (winograd_tiles.cpp,
// pointwise_paths.cpp) share: a clock, a median, and aligned buffers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bench {

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Cache-line aligned floats that outlive the runs.
struct Buffer {
  std::vector<float> storage;
  float* data;
  explicit Buffer(int64_t floats) : storage(static_cast<size_t>(floats) + 16) {
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + (64 - address % 64) % 64 / sizeof(float);
  }
};

}  // namespace bench
