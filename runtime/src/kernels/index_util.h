// index_util.h - reading index tensors in the indexing kernels (internal to the runtime).
#pragma once

#include <cstdint>
#include <cstring>

namespace aotc::rt::detail {

// Index i of an index tensor of elem_size bytes, made a valid position in [0, size).
inline int64_t read_index(const void* index, int64_t elem_size, int64_t i, int64_t size) {
  int64_t v;
  if (elem_size == 4) {
    int32_t v32;
    std::memcpy(&v32, static_cast<const unsigned char*>(index) + i * 4, 4);
    v = v32;
  } else {
    std::memcpy(&v, static_cast<const unsigned char*>(index) + i * 8, 8);
  }
  if (v < 0) v += size;
  return v < 0 ? 0 : (v >= size ? size - 1 : v);
}

}  // namespace aotc::rt::detail
