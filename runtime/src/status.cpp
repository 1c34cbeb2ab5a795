#include "status.h"

#include <cstdarg>
#include <cstdio>

namespace aotc::rt {
namespace {
// Fixed size so that reporting an error never allocates (and so never fails itself).
thread_local char last_error[1024] = "";
}  // namespace

aotc_status fail(aotc_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(last_error, sizeof last_error, format, args);
  va_end(args);
  return status;
}

void clear_error() { last_error[0] = '\0'; }

}  // namespace aotc::rt

extern "C" AOTC_API const char* aotc_last_error(void) { return aotc::rt::last_error; }

extern "C" AOTC_API const char* aotc_status_name(aotc_status status) {
  switch (status) {
    case AOTC_OK:
      return "AOTC_OK";
    case AOTC_ERR_NULL_POINTER:
      return "AOTC_ERR_NULL_POINTER";
    case AOTC_ERR_INVALID_ARGUMENT:
      return "AOTC_ERR_INVALID_ARGUMENT";
    case AOTC_ERR_WRONG_COUNT:
      return "AOTC_ERR_WRONG_COUNT";
    case AOTC_ERR_WRONG_DTYPE:
      return "AOTC_ERR_WRONG_DTYPE";
    case AOTC_ERR_WRONG_SHAPE:
      return "AOTC_ERR_WRONG_SHAPE";
    case AOTC_ERR_BUFFER_TOO_SMALL:
      return "AOTC_ERR_BUFFER_TOO_SMALL";
    case AOTC_ERR_WRONG_MODEL:
      return "AOTC_ERR_WRONG_MODEL";
    case AOTC_ERR_ABI_MISMATCH:
      return "AOTC_ERR_ABI_MISMATCH";
    case AOTC_ERR_OUT_OF_MEMORY:
      return "AOTC_ERR_OUT_OF_MEMORY";
    case AOTC_ERR_SYSTEM:
      return "AOTC_ERR_SYSTEM";
    case AOTC_ERR_INTERNAL:
      return "AOTC_ERR_INTERNAL";
  }
  return "AOTC_ERR_UNKNOWN";
}
