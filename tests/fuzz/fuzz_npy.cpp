// fuzz_npy.cpp - libFuzzer target for the .npy reader (tools/aotc-run/npy.h).
//
// Every input is treated as a whole .npy file image. The reader may reject it, but only
// by throwing npy::Error: any other exception, a crash, a leak, undefined behaviour or a
// hang is a bug. Checked on every input:
//   - decode() from memory and read_file() of the same bytes agree (same error or the
//     same array), so the file path (pread, fstat) is fuzzed too;
//   - an accepted array is self-consistent (rank <= 8, data size == dtype size x
//     element count, bools are 0/1) and survives encode() -> decode() unchanged;
//   - parse_header_dict() on the raw bytes never fails other than by npy::Error.
//
// Built by tests/fuzz/meson.build with clang++ -fsanitize=fuzzer,address,undefined.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "npy.h"

namespace npy = aotc::npy;

namespace {

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "fuzz_npy: invariant violated: %s\n", what);
  std::abort();
}

struct Result {
  std::optional<npy::Array> array;
  std::string error;  // set when the reader rejected the input
};

void check_array(const npy::Array& a) {
  if (a.shape.size() > static_cast<size_t>(npy::kMaxRank)) bug("rank above kMaxRank");
  uint64_t bytes = 0;
  try {
    bytes = npy::byte_count(a.dtype, a.shape);
  } catch (const npy::Error&) {
    bug("accepted an array whose shape byte_count() rejects");
  }
  if (bytes != a.data.size()) bug("data size differs from the shape's byte count");
  if (reinterpret_cast<uintptr_t>(a.data.data()) % npy::AlignedBytes::kAlignment != 0)
    bug("data not 64-byte aligned");
  if (a.dtype == npy::DType::Bool)
    for (size_t i = 0; i < a.data.size(); ++i)
      if (a.data.data()[i] > 1) bug("bool byte other than 0/1 accepted");
}

bool same_array(const npy::Array& a, const npy::Array& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.data.size() == b.data.size() &&
         (a.data.size() == 0 || std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0);
}

// The same bytes through read_file(): an in-memory file, opened by its /proc path.
Result via_file(const uint8_t* data, size_t size) {
  Result r;
  const int fd = memfd_create("fuzz_npy", MFD_CLOEXEC);
  if (fd < 0) return r;  // no memfd: skip this half (r.array empty, error empty)
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      return r;
    }
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    r.array = npy::read_file(path);
  } catch (const npy::Error& e) {
    r.error = e.what();
    if (r.error.empty()) bug("empty error message from read_file");
  }
  ::close(fd);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const unsigned char> bytes(data, size);

  Result mem;
  try {
    mem.array = npy::decode(bytes, "fuzz");
    check_array(*mem.array);
  } catch (const npy::Error& e) {
    mem.error = e.what();
    if (mem.error.empty()) bug("empty error message from decode");
  }

  const Result file = via_file(data, size);
  if (file.array || !file.error.empty()) {
    if (mem.array.has_value() != file.array.has_value()) bug("decode() and read_file() disagree");
    if (mem.array && !same_array(*mem.array, *file.array))
      bug("decode() and read_file() read different data");
  }

  if (mem.array) {
    // Round trip: what the writer makes of an accepted array must read back the same.
    const npy::Array& a = *mem.array;
    std::vector<unsigned char> image;
    try {
      image = npy::encode(a.dtype, a.shape, std::span<const unsigned char>(a.data.data(), a.data.size()));
    } catch (const npy::Error&) {
      bug("encode() rejected an array that decode() accepted");
    }
    npy::Array back;
    try {
      back = npy::decode(image, "round trip");
    } catch (const npy::Error&) {
      bug("decode() rejected what encode() wrote");
    }
    if (!same_array(a, back)) bug("encode() -> decode() changed the array");
    if ((npy::dtype_name(a.dtype) == nullptr) || (npy::dtype_descr(a.dtype) == nullptr))
      bug("null dtype name");
    (void)npy::shape_string(a.shape);
  }

  // The header parser on its own, on the raw text (no preamble, any bytes).
  try {
    const npy::Header h = npy::parse_header_dict(std::string_view(reinterpret_cast<const char*>(data), size));
    if (h.shape.size() > static_cast<size_t>(npy::kMaxRank)) bug("parse_header_dict accepted rank > 8");
    for (const int64_t d : h.shape)
      if (d < 0) bug("parse_header_dict accepted a negative dimension");
  } catch (const npy::Error&) {
  }
  return 0;
}
