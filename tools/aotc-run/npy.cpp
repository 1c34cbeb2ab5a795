// npy.cpp - see npy.h. The format: "\x93NUMPY", major and minor version bytes, the header
// length (uint16 LE for 1.0, uint32 LE for 2.0/3.0), the header (a Python dict literal,
// space padded, ending in '\n'), then the raw data.
#include "npy.h"

#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace aotc::npy {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader hands little-endian data to the model as is");

namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// A real header is well under 1 KiB (numpy itself refuses more than 10000 bytes by
// default); the cap keeps a hostile length field from making us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;

[[noreturn]] void fail(std::string_view what, const std::string& problem) {
  throw Error(std::string(what) + ": " + problem);
}

std::string errno_text(int error) { return std::strerror(error); }

// ---- dtypes ---------------------------------------------------------------------------

struct DTypeInfo {
  DType dtype;
  char kind;  // numpy's kind code in descr: 'b', 'i', 'u', 'f'
  size_t size;
  const char* name;
  const char* descr;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::Bool, 'b', 1, "bool", "|b1"},       {DType::Int8, 'i', 1, "int8", "|i1"},
    {DType::Int16, 'i', 2, "int16", "<i2"},     {DType::Int32, 'i', 4, "int32", "<i4"},
    {DType::Int64, 'i', 8, "int64", "<i8"},     {DType::UInt8, 'u', 1, "uint8", "|u1"},
    {DType::UInt16, 'u', 2, "uint16", "<u2"},   {DType::UInt32, 'u', 4, "uint32", "<u4"},
    {DType::UInt64, 'u', 8, "uint64", "<u8"},   {DType::Float16, 'f', 2, "float16", "<f2"},
    {DType::Float32, 'f', 4, "float32", "<f4"}, {DType::Float64, 'f', 8, "float64", "<f8"},
};

const DTypeInfo& info_of(DType dtype) {
  for (const DTypeInfo& info : kDTypes)
    if (info.dtype == dtype) return info;
  return kDTypes[0];  // unreachable for valid enumerators
}

// Maps a descr string like "<f4" to a dtype; throws Error text (without the file name).
DType parse_descr(const std::string& descr) {
  const std::string supported = "supported: bool, int8/16/32/64, uint8/16/32/64, float16/32/64";
  if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos)
    throw Error("unsupported dtype descr '" + descr + "' (" + supported + ")");
  const char order = descr[0];
  const char kind = descr[1];
  const std::string size_text = descr.substr(2);
  for (const DTypeInfo& info : kDTypes) {
    if (info.kind != kind || size_text != std::to_string(info.size)) continue;
    if (info.size > 1 && order == '>')
      throw Error("big-endian data ('" + descr +
                  "') is not supported; convert it with "
                  "arr.astype('" +
                  info.descr + "')");
    if (info.size > 1 && order == '|')
      throw Error("invalid dtype descr '" + descr + "': multi-byte types need a byte order");
    return info.dtype;
  }
  throw Error("unsupported dtype descr '" + descr + "' (" + supported + ")");
}

// ---- the header dictionary ------------------------------------------------------------

// A recursive-descent parser for the small subset of Python literals that numpy writes:
// a dict with string keys, and string, bool and tuple-of-int values.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Header parse() {
    bool have_descr = false, have_order = false, have_shape = false;
    Header header;
    skip_space();
    expect('{', "the header is not a dict: expected '{'");
    skip_space();
    while (peek() != '}') {
      const std::string key = parse_string("a dict key");
      skip_space();
      expect(':', "expected ':' after key '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (have_descr) error("duplicate key 'descr'");
        have_descr = true;
        if (peek() == '[') error("structured dtypes (a list in 'descr') are not supported");
        header.dtype = parse_descr(parse_string("the 'descr' value"));
      } else if (key == "fortran_order") {
        if (have_order) error("duplicate key 'fortran_order'");
        have_order = true;
        header.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) error("duplicate key 'shape'");
        have_shape = true;
        header.shape = parse_shape();
      } else {
        error("unexpected key '" + key + "' (expected 'descr', 'fortran_order', 'shape')");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != '}') {
        error("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    ++pos_;  // '}'
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the header dict");
    if (!have_descr) error("missing key 'descr'");
    if (!have_order) error("missing key 'fortran_order'");
    if (!have_shape) error("missing key 'shape'");
    return header;
  }

 private:
  [[noreturn]] void error(const std::string& problem) const {
    throw Error("malformed header: " + problem + " (at offset " + std::to_string(pos_) + ")");
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c, const std::string& problem) {
    if (peek() != c) error(problem);
    ++pos_;
  }

  std::string parse_string(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') error(std::string("expected a string for ") + what);
    const size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      // numpy never writes escapes; refusing them keeps the parser trivial.
      if (text_[pos_] == '\\') error("escape sequences in strings are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size()) error("unterminated string");
    return std::string(text_.substr(start, pos_++ - start));
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    error("'fortran_order' must be True or False");
  }

  std::vector<int64_t> parse_shape() {
    expect('(', "'shape' must be a tuple like (2, 3)");
    std::vector<int64_t> shape;
    skip_space();
    bool saw_comma = false;
    while (peek() != ')') {
      if (shape.size() >= static_cast<size_t>(kMaxRank))
        error("rank above " + std::to_string(kMaxRank) + " is not supported");
      shape.push_back(parse_dim());
      skip_space();
      saw_comma = peek() == ',';
      if (saw_comma) {
        ++pos_;
        skip_space();
      } else if (peek() != ')') {
        error("expected ',' or ')' in 'shape'");
      }
    }
    // In Python "(3)" is the int 3, not a tuple.
    if (shape.size() == 1 && !saw_comma) error("'shape' (n) is not a tuple: write (n,)");
    ++pos_;  // ')'
    return shape;
  }

  int64_t parse_dim() {
    const bool negative = peek() == '-';
    if (negative) ++pos_;
    if (peek() < '0' || peek() > '9') error("expected an integer dimension in 'shape'");
    uint64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      const uint64_t digit = static_cast<uint64_t>(peek() - '0');
      if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10)
        error("dimension in 'shape' does not fit in 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2 long literal, in very old files
    if (negative && value != 0) error("negative dimension -" + std::to_string(value) + " in 'shape'");
    return static_cast<int64_t>(value);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// ---- reading --------------------------------------------------------------------------

// Where the bytes of an .npy image come from: memory or a file. The total size is known
// up front, so every read is bounds-checked before it is made.
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset (offset + n <= size()).
  virtual void read(uint64_t offset, void* dst, size_t n) = 0;
};

class MemorySource final : public Source {
 public:
  explicit MemorySource(std::span<const unsigned char> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, void* dst, size_t n) override {
    if (n) std::memcpy(dst, bytes_.data() + offset, n);
  }

 private:
  std::span<const unsigned char> bytes_;
};

class FileSource final : public Source {
 public:
  FileSource(int fd, uint64_t size, std::string_view what) : fd_(fd), size_(size), what_(what) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* dst, size_t n) override {
    auto* out = static_cast<unsigned char*>(dst);
    while (n > 0) {
      const size_t chunk = n < (size_t{1} << 30) ? n : (size_t{1} << 30);
      const ssize_t got = ::pread(fd_, out, chunk, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(what_, "read failed: " + errno_text(errno));
      if (got == 0) fail(what_, "file shrank while being read");
      out += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }

 private:
  int fd_;
  uint64_t size_;
  std::string_view what_;
};

uint32_t load_le(const unsigned char* p, size_t n) {
  uint32_t value = 0;
  for (size_t i = 0; i < n; ++i) value |= static_cast<uint32_t>(p[i]) << (8 * i);
  return value;
}

Array decode_source(Source& source, std::string_view what) {
  const uint64_t size = source.size();
  // Magic and version.
  unsigned char preamble[12] = {};
  const size_t have = static_cast<size_t>(size < 8 ? size : 8);
  source.read(0, preamble, have);
  if (std::memcmp(preamble, kMagic, have < 6 ? have : 6) != 0)
    fail(what, "not an .npy file (bad magic: expected \\x93NUMPY)");
  if (size < 8)
    fail(what, "truncated .npy file: " + std::to_string(size) + " bytes, shorter than the preamble");
  const int major = preamble[6], minor = preamble[7];
  if (minor != 0 || major < 1 || major > 3)
    fail(what, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (size < 8 + length_bytes) fail(what, "truncated header: the file ends inside the header length field");
  source.read(8, preamble + 8, length_bytes);
  const uint64_t header_len = load_le(preamble + 8, length_bytes);
  const uint64_t header_start = 8 + length_bytes;
  if (header_len > size - header_start)
    fail(what, "truncated header: header length " + std::to_string(header_len) +
                   " goes beyond the end of the file (" + std::to_string(size - header_start) +
                   " bytes left)");
  if (header_len > kMaxHeaderBytes)
    fail(what, "header length " + std::to_string(header_len) + " is implausibly large");

  // The header dict.
  std::string text(static_cast<size_t>(header_len), '\0');
  source.read(header_start, text.data(), text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80 || (u < 0x20 && c != '\n' && c != '\t' && c != '\r'))
      fail(what, "malformed header: it contains a non-ASCII or control byte");
  }
  Header header;
  try {
    header = parse_header_dict(text);
  } catch (const Error& e) {
    fail(what, e.what());
  }
  if (header.fortran_order)
    fail(what,
         "fortran_order is True: only C-order arrays are supported "
         "(save np.ascontiguousarray(arr) instead)");

  // The data: exactly as many bytes as the shape says, no fewer and no more.
  uint64_t want = 0;
  try {
    want = byte_count(header.dtype, header.shape);
  } catch (const Error& e) {
    fail(what, e.what());
  }
  const uint64_t data_start = header_start + header_len;
  const uint64_t got = size - data_start;
  const std::string described = std::string(dtype_name(header.dtype)) + " " + shape_string(header.shape);
  if (got < want)
    fail(what, "data is truncated: the header says " + described + " (" + std::to_string(want) +
                   " bytes), the file has " + std::to_string(got) + " data bytes");
  if (got > want)
    fail(what,
         "the file has " + std::to_string(got - want) + " unexpected bytes after the data of " + described);
  if (want > std::numeric_limits<size_t>::max()) fail(what, "array too large for this machine");

  Array array;
  array.dtype = header.dtype;
  array.shape = std::move(header.shape);
  try {
    array.data = AlignedBytes(static_cast<size_t>(want));
  } catch (const std::bad_alloc&) {
    fail(what, "out of memory reading " + std::to_string(want) + " bytes of data");
  }
  source.read(data_start, array.data.data(), array.data.size());
  if (array.dtype == DType::Bool) {
    // numpy bools are 0 or 1; anything else would be undefined behaviour in C++ code.
    for (size_t i = 0; i < array.data.size(); ++i)
      if (array.data.data()[i] > 1)
        fail(what, "bool element " + std::to_string(i) + " has byte value " +
                       std::to_string(array.data.data()[i]) + " (must be 0 or 1)");
  }
  return array;
}

// Closes a file descriptor on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

std::string make_header(DType dtype, std::span<const int64_t> shape) {
  const uint64_t unused = byte_count(dtype, shape);  // validates the shape
  (void)unused;
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) shape_text += ", ";
    shape_text += std::to_string(shape[i]);
  }
  shape_text += shape.size() == 1 ? ",)" : ")";
  // The same text numpy writes (keys sorted, trailing ", ").
  std::string dict = std::string("{'descr': '") + dtype_descr(dtype) +
                     "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  // Pad with spaces and end with '\n' so that the data starts 64-byte aligned.
  size_t preamble = 10;  // magic, version, uint16 length
  int major = 1;
  const auto padded = [&] { return (preamble + dict.size() + 1 + 63) / 64 * 64 - preamble; };
  if (padded() > 0xffff) {
    preamble = 12;
    major = 2;
  }
  const size_t header_len = padded();
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(reinterpret_cast<const char*>(kMagic), sizeof kMagic);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  return out + dict;
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    const ssize_t wrote = ::write(fd, p, n);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) throw Error("cannot write '" + path + "': " + errno_text(errno));
    p += wrote;
    n -= static_cast<size_t>(wrote);
  }
}

}  // namespace

// ---- public functions -----------------------------------------------------------------

size_t dtype_size(DType dtype) { return info_of(dtype).size; }
const char* dtype_name(DType dtype) { return info_of(dtype).name; }
const char* dtype_descr(DType dtype) { return info_of(dtype).descr; }

AlignedBytes::AlignedBytes(size_t size) : size_(size) {
  // aligned_alloc wants a multiple of the alignment, and a non-zero size.
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < size) throw std::bad_alloc();
  data_ = static_cast<unsigned char*>(std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment));
  if (!data_) throw std::bad_alloc();
  std::memset(data_, 0, rounded ? rounded : kAlignment);
}

AlignedBytes::AlignedBytes(AlignedBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBytes& AlignedBytes::operator=(AlignedBytes&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

AlignedBytes::~AlignedBytes() { std::free(data_); }

Header parse_header_dict(std::string_view text) { return HeaderParser(text).parse(); }

uint64_t element_count(std::span<const int64_t> shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw Error("rank " + std::to_string(shape.size()) + " is above the maximum " + std::to_string(kMaxRank));
  uint64_t count = 1;
  for (const int64_t dim : shape) {
    if (dim < 0)
      throw Error("negative dimension " + std::to_string(dim) + " in shape " + shape_string(shape));
    const auto d = static_cast<uint64_t>(dim);
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / d)
      throw Error("shape " + shape_string(shape) + " has more elements than fit in 64 bits");
    count *= d;
  }
  return count;
}

uint64_t byte_count(DType dtype, std::span<const int64_t> shape) {
  const uint64_t count = element_count(shape);
  const uint64_t size = dtype_size(dtype);
  if (count > std::numeric_limits<uint64_t>::max() / size)
    throw Error("shape " + shape_string(shape) + " of " + dtype_name(dtype) +
                " takes more bytes than fit in 64 bits");
  return count * size;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

Array decode(std::span<const unsigned char> bytes, std::string_view what) {
  MemorySource source(bytes);
  return decode_source(source, what);
}

Array read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open: " + errno_text(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, "cannot stat: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not an .npy file");
  if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file");
  FileSource source(fd, static_cast<uint64_t>(st.st_size), path);
  return decode_source(source, path);
}

std::vector<unsigned char> encode(DType dtype, std::span<const int64_t> shape,
                                  std::span<const unsigned char> data) {
  const std::string header = make_header(dtype, shape);
  if (data.size() != byte_count(dtype, shape))
    throw Error("encode: " + std::to_string(data.size()) + " data bytes do not match " + dtype_name(dtype) +
                " " + shape_string(shape));
  std::vector<unsigned char> out(header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string write_temp_file(const std::string& path, DType dtype, std::span<const int64_t> shape,
                            std::span<const unsigned char> data) {
  const std::string header = make_header(dtype, shape);
  if (data.size() != byte_count(dtype, shape))
    throw Error("cannot write '" + path + "': " + std::to_string(data.size()) + " data bytes do not match " +
                dtype_name(dtype) + " " + shape_string(shape));
  // Same directory as the target, so that rename() is atomic.
  std::string temp = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) throw Error("cannot create '" + temp + "': " + errno_text(errno));
  try {
    FdCloser closer{fd};
    // mkstemp makes the file 0600; give it the mode a plain create would.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd, 0666 & ~mask) != 0)
      throw Error("cannot set the mode of '" + temp + "': " + errno_text(errno));
    write_all(fd, header.data(), header.size(), temp);
    write_all(fd, data.data(), data.size(), temp);
    if (::fsync(fd) != 0) throw Error("cannot write '" + temp + "': " + errno_text(errno));
    closer.fd = -1;
    if (::close(fd) != 0) throw Error("cannot write '" + temp + "': " + errno_text(errno));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  return temp;
}

void commit_temp_file(const std::string& temp_path, const std::string& path) {
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp_path.c_str());
    throw Error("cannot rename '" + temp_path + "' to '" + path + "': " + errno_text(error));
  }
}

void write_file(const std::string& path, DType dtype, std::span<const int64_t> shape,
                std::span<const unsigned char> data) {
  commit_temp_file(write_temp_file(path, dtype, shape, data), path);
}

}  // namespace aotc::npy
