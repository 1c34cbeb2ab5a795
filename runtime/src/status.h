// status.h - how runtime code reports errors across the C ABI: a status code plus a
// thread-local message (read with aotc_last_error()).
#pragma once

#include <aotc/aotc.h>

namespace aotc::rt {

// Records a printf-style message for this thread and returns status, so call sites
// read `return fail(AOTC_ERR_WRONG_SHAPE, "...", ...);`.
aotc_status fail(aotc_status status, const char* format, ...) __attribute__((format(printf, 2, 3)));

// Clears this thread's message; successful ABI calls leave the last error as it was,
// like errno, so callers read it only after a failure.
void clear_error();

}  // namespace aotc::rt
