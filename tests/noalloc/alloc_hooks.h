// alloc_hooks.h - counts heap allocations made by any thread of the process while
// counting is on. Link alloc_hooks.cpp into an executable (with -rdynamic when it
// dlopens code, so that the loaded libraries' malloc calls bind to it too): it defines
// malloc, calloc, realloc, free, memalign, aligned_alloc, posix_memalign, valloc,
// pvalloc and operator new/delete, forwarding to glibc's __libc_* functions. Not for
// sanitizer builds, which bring their own allocator.
#pragma once

#include <cstddef>

namespace aotc::test {

void start_counting_allocations();       // resets the count and turns counting on
long stop_counting_allocations();        // turns it off; returns the count
size_t first_counted_allocation_size();  // size of the first one counted since the start

}  // namespace aotc::test
