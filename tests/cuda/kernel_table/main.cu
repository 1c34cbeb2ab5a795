// The CUDA kernel table (kernel_table.h): every family of families.def, then the summary
// line. Without a GPU it says so and exits with 77 (meson: skipped).
#include <cstdio>
#include <cstring>
#include <string>

#include "kernel_table.h"

#define AOTC_KERNEL_FAMILY(name) void name##_cases(aotc::test::KernelTable& t);
namespace aotc::test {
#include "families.def"
}
#undef AOTC_KERNEL_FAMILY

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no GPU here\n");
    return 77;
  }
  const std::string only = argc > 1 ? argv[1] : "";  // one family, by name
  aotc::test::KernelTable t;
#define AOTC_KERNEL_FAMILY(name)       \
  if (only.empty() || only == #name) { \
    t.begin_family(#name);             \
    aotc::test::name##_cases(t);       \
  }
#include "families.def"
#undef AOTC_KERNEL_FAMILY
  return t.finish();
}
