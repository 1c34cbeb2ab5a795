// errors.cpp - the first failure of a thread's kernel launches, read after a capture.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdio>

namespace aotc::rt::cuda {
namespace {
thread_local char g_error[512];
}

void note_error(const char* what, const char* reason) {
  if (g_error[0]) return;  // the first failure explains the others
  std::snprintf(g_error, sizeof g_error, "%s: %s", what, reason);
}

const char* first_error() { return g_error; }

void forget_error() { g_error[0] = 0; }

void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) note_error(kernel, cudaGetErrorString(e));
}

}  // namespace aotc::rt::cuda
