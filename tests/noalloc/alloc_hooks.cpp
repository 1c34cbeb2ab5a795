// alloc_hooks.cpp - see alloc_hooks.h.
#include "alloc_hooks.h"

#include <atomic>
#include <cerrno>
#include <new>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* pointer);
}

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
std::atomic<size_t> g_first_size{0};

inline void count(size_t size) {
  if (!g_counting.load(std::memory_order_relaxed)) return;
  if (g_allocations.fetch_add(1, std::memory_order_relaxed) == 0) g_first_size.store(size);
}

}  // namespace

namespace aotc::test {

void start_counting_allocations() {
  g_allocations = 0;
  g_first_size = 0;
  g_counting = true;
}

long stop_counting_allocations() {
  g_counting = false;
  return g_allocations.load();
}

size_t first_counted_allocation_size() { return g_first_size.load(); }

}  // namespace aotc::test

#define AOTC_HOOK extern "C" __attribute__((visibility("default")))

AOTC_HOOK void* malloc(size_t size) {
  count(size);
  return __libc_malloc(size);
}

AOTC_HOOK void* calloc(size_t n, size_t size) {
  count(n * size);
  return __libc_calloc(n, size);
}

AOTC_HOOK void* realloc(void* pointer, size_t size) {
  count(size);
  return __libc_realloc(pointer, size);
}

AOTC_HOOK void free(void* pointer) { __libc_free(pointer); }

AOTC_HOOK void* memalign(size_t alignment, size_t size) {
  count(size);
  return __libc_memalign(alignment, size);
}

AOTC_HOOK void* aligned_alloc(size_t alignment, size_t size) {
  count(size);
  return __libc_memalign(alignment, size);
}

AOTC_HOOK int posix_memalign(void** out, size_t alignment, size_t size) {
  count(size);
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* pointer = __libc_memalign(alignment, size);
  if (!pointer) return ENOMEM;
  *out = pointer;
  return 0;
}

AOTC_HOOK void* valloc(size_t size) {
  count(size);
  return __libc_memalign(4096, size);
}

AOTC_HOOK void* pvalloc(size_t size) {
  count(size);
  return __libc_memalign(4096, (size + 4095) / 4096 * 4096);
}

void* operator new(size_t size) {
  if (void* p = malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return malloc(size ? size : 1); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return malloc(size ? size : 1); }
void* operator new(size_t size, std::align_val_t alignment) {
  const size_t a = static_cast<size_t>(alignment);
  if (void* p = aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size, std::align_val_t alignment) { return operator new(size, alignment); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
