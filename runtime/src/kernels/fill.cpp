// fill.cpp - sets every element of a buffer to one value of any element size (zeros_like,
// full_like, the background of constant padding). A value whose bytes are all equal
// (zero, -1, true) is a memset; others repeat the element with word-sized stores.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

template <class T>
void fill_words(ThreadPool& pool, int64_t count, const unsigned char* value, unsigned char* dst) {
  T v;
  std::memcpy(&v, value, sizeof(T));
  pool.parallel_for(count, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(dst + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  });
}

}  // namespace

void fill(ThreadPool& pool, const FillParams& p, void* dst) {
  if (p.count <= 0 || p.elem_size <= 0 || p.elem_size > 8) return;
  auto* d = static_cast<unsigned char*>(dst);
  bool uniform = true;
  for (int64_t b = 1; b < p.elem_size; ++b) uniform &= p.value[b] == p.value[0];
  if (uniform) {
    const int64_t bytes = p.count * p.elem_size;
    pool.parallel_for(bytes, detail::kElementwiseMinChunk * 4, [&](int64_t begin, int64_t end) {
      std::memset(d + begin, p.value[0], static_cast<size_t>(end - begin));
    });
    return;
  }
  switch (p.elem_size) {
    case 2:
      return fill_words<uint16_t>(pool, p.count, p.value, d);
    case 4:
      return fill_words<uint32_t>(pool, p.count, p.value, d);
    case 8:
      return fill_words<uint64_t>(pool, p.count, p.value, d);
    default:
      pool.parallel_for(p.count, detail::kElementwiseMinChunk, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          std::memcpy(d + i * p.elem_size, p.value, static_cast<size_t>(p.elem_size));
      });
  }
}

}  // namespace aotc::rt
