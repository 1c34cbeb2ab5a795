// probe.cpp - configure-time check (tests/fuzz/meson.build) that clang++ can link a
// libFuzzer target with ASan and UBSan on this machine.
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)data;
  (void)size;
  return 0;
}
