// npy.h - reader and writer of NumPy .npy files (format versions 1.0, 2.0, 3.0), for
// aotc-run and the tests. No LibTorch, no NumPy: the format is small and fully specified
// (numpy.lib.format). Only little-endian, C-order, non-structured arrays are supported.
//
// The reader treats every file as hostile: each problem (bad magic, truncated or
// malformed header, absurd shape, short data, ...) throws npy::Error with a one-line
// message that names the file and the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace aotc::npy {

// The highest rank accepted (the same as AOTC_MAX_RANK).
inline constexpr int kMaxRank = 8;

// Element types the reader recognizes. Those beyond aotc's own dtypes (float64, uint8, ...)
// are read too, so that a caller can say "expected float32, got float64" instead of
// failing on the header.
enum class DType {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  Float32,
  Float64,
};

size_t dtype_size(DType dtype);        // bytes per element
const char* dtype_name(DType dtype);   // "float32", like numpy's dtype.name
const char* dtype_descr(DType dtype);  // "<f4", "|b1": what the writer puts in 'descr'

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes aligned to 64 (a cache line, and enough for any SIMD load), so a tensor read from
// a file can be handed to a model without a copy.
class AlignedBytes {
 public:
  static constexpr size_t kAlignment = 64;
  AlignedBytes() = default;
  explicit AlignedBytes(size_t size);  // zero-filled; throws std::bad_alloc
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  AlignedBytes(AlignedBytes&& other) noexcept;
  AlignedBytes& operator=(AlignedBytes&& other) noexcept;
  ~AlignedBytes();

  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

// A dense row-major array as stored in (or to be stored to) an .npy file.
struct Array {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // empty for rank 0 (a scalar: one element)
  AlignedBytes data;           // element_count(shape) * dtype_size(dtype) bytes, little-endian
};

// What the header dictionary says.
struct Header {
  DType dtype = DType::Float32;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the header dictionary text, e.g. "{'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }" with any trailing spaces/newline. Throws Error (no file name).
// Does not reject fortran_order True: the caller decides (see decode()).
Header parse_header_dict(std::string_view text);

// Number of elements of shape, and the bytes they take; throw Error on negative dims,
// rank above kMaxRank, or overflow of 64 bits.
uint64_t element_count(std::span<const int64_t> shape);
uint64_t byte_count(DType dtype, std::span<const int64_t> shape);

// "[2, 3]", "[]" for rank 0.
std::string shape_string(std::span<const int64_t> shape);

// Decodes a whole .npy image held in memory. `what` names it in error messages.
Array decode(std::span<const unsigned char> bytes, std::string_view what = "<memory>");

// Reads an .npy file; messages look like "'in.npy': truncated header (...)".
Array read_file(const std::string& path);

// The file image of an array: version 1.0 header (2.0 if it would not fit), padded so
// that the data starts at a multiple of 64 bytes, then the data.
std::vector<unsigned char> encode(DType dtype, std::span<const int64_t> shape,
                                  std::span<const unsigned char> data);

// Writes an .npy file atomically: to a temporary file in the same directory, then
// renamed over path, so a reader never sees a partial file and a failure leaves nothing.
void write_file(const std::string& path, DType dtype, std::span<const int64_t> shape,
                std::span<const unsigned char> data);

// The two halves of write_file, for writing several files all-or-nothing:
// write_temp_file returns the temporary's path (removed again if it fails).
std::string write_temp_file(const std::string& path, DType dtype, std::span<const int64_t> shape,
                            std::span<const unsigned char> data);
void commit_temp_file(const std::string& temp_path, const std::string& path);

}  // namespace aotc::npy
