// test_npy.cpp - the .npy reader/writer of aotc-run (tools/aotc-run/npy.h): round trips of
// every dtype and rank, the exact bytes of the header, and hostile files.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "npy.h"

namespace npy = aotc::npy;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<unsigned char>;

// An .npy image with the given version, header text (used as is: no padding added) and
// data; header_len overrides the length field when given.
Bytes make_npy(int major, const std::string& header, const Bytes& data = {}, int64_t header_len = -1) {
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  const uint64_t len = header_len >= 0 ? static_cast<uint64_t>(header_len) : header.size();
  const int length_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < length_bytes; ++i) out.push_back(static_cast<unsigned char>(len >> (8 * i)));
  // push_back rather than insert: GCC 12 -O3 warns falsely (stringop-overflow) on insert here.
  for (char c : header) out.push_back(static_cast<unsigned char>(c));
  for (unsigned char b : data) out.push_back(b);
  return out;
}

std::string dict(const std::string& descr, const std::string& shape, const char* fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

// The message decode() throws for bytes, or "" when it does not throw.
std::string decode_error(const Bytes& bytes) {
  try {
    npy::decode(bytes, "bad.npy");
  } catch (const npy::Error& e) {
    return e.what();
  }
  return "";
}

std::string header_error(const std::string& text) {
  try {
    npy::parse_header_dict(text);
  } catch (const npy::Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh empty directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "aotc-npy-test-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path)) names.push_back(entry.path().filename());
    return names;
  }
};

Bytes pattern_data(npy::DType dtype, size_t bytes) {
  Bytes data(bytes);
  for (size_t i = 0; i < bytes; ++i)
    data[i] = dtype == npy::DType::Bool ? static_cast<unsigned char>(i % 3 == 0)
                                        : static_cast<unsigned char>(i * 37 + 11);
  return data;
}

const npy::DType kAllDTypes[] = {
    npy::DType::Bool,   npy::DType::Int8,    npy::DType::Int16,   npy::DType::Int32,
    npy::DType::Int64,  npy::DType::UInt8,   npy::DType::UInt16,  npy::DType::UInt32,
    npy::DType::UInt64, npy::DType::Float16, npy::DType::Float32, npy::DType::Float64,
};

}  // namespace

TEST_SUITE("npy") {
  TEST_CASE("dtype names, sizes and descrs") {
    CHECK(npy::dtype_size(npy::DType::Float32) == 4);
    CHECK(npy::dtype_size(npy::DType::Float16) == 2);
    CHECK(npy::dtype_size(npy::DType::Int64) == 8);
    CHECK(npy::dtype_size(npy::DType::Bool) == 1);
    CHECK(std::string(npy::dtype_name(npy::DType::Float64)) == "float64");
    CHECK(std::string(npy::dtype_descr(npy::DType::Float32)) == "<f4");
    CHECK(std::string(npy::dtype_descr(npy::DType::Float16)) == "<f2");
    CHECK(std::string(npy::dtype_descr(npy::DType::Int64)) == "<i8");
    CHECK(std::string(npy::dtype_descr(npy::DType::Int32)) == "<i4");
    CHECK(std::string(npy::dtype_descr(npy::DType::Bool)) == "|b1");
    CHECK(std::string(npy::dtype_descr(npy::DType::UInt8)) == "|u1");
  }

  TEST_CASE("round trip of every dtype, rank 0 to 4, in memory and through files") {
    const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {2, 1, 3}, {1, 2, 3, 2}, {0, 3}};
    TempDir dir;
    for (const npy::DType dtype : kAllDTypes) {
      for (const auto& shape : shapes) {
        const std::string what = std::string(npy::dtype_name(dtype)) + " " + npy::shape_string(shape);
        CAPTURE(what);
        const Bytes data = pattern_data(dtype, npy::byte_count(dtype, shape));
        const Bytes image = npy::encode(dtype, shape, data);
        // The data starts 64-byte aligned, right after the header's '\n'.
        const size_t offset = image.size() - data.size();
        CHECK(offset % 64 == 0);
        CHECK(image[offset - 1] == '\n');
        CHECK(image[6] == 1);  // version 1.0
        CHECK(image[7] == 0);
        CHECK(image[8] + 256u * image[9] == offset - 10);

        const npy::Array decoded = npy::decode(image);
        CHECK(decoded.dtype == dtype);
        CHECK(decoded.shape == shape);
        REQUIRE(decoded.data.size() == data.size());
        CHECK((data.empty() || std::memcmp(decoded.data.data(), data.data(), data.size()) == 0));
        CHECK(reinterpret_cast<uintptr_t>(decoded.data.data()) % 64 == 0);

        const std::string path = (dir.path / "a.npy").string();
        npy::write_file(path, dtype, shape, data);
        const npy::Array read = npy::read_file(path);
        CHECK(read.dtype == dtype);
        CHECK(read.shape == shape);
        REQUIRE(read.data.size() == data.size());
        CHECK((data.empty() || std::memcmp(read.data.data(), data.data(), data.size()) == 0));
      }
    }
    CHECK(dir.entries() == std::vector<std::string>{"a.npy"});  // no temporary left behind
  }

  TEST_CASE("the header is byte for byte what numpy.lib.format writes") {
    const float values[6] = {0, 1, 2, 3, 4, 5};
    const int64_t shape[2] = {2, 3};
    const Bytes image = npy::encode(npy::DType::Float32, shape,
                                    {reinterpret_cast<const unsigned char*>(values), sizeof values});
    const std::string dict_text = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    std::string expected = std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) + dict_text;
    expected.append(128 - 1 - expected.size(), ' ');
    expected += '\n';
    REQUIRE(image.size() == 128 + sizeof values);
    CHECK(std::string(image.begin(), image.begin() + 128) == expected);

    // Rank 1 and rank 0 tuples in Python syntax.
    const int64_t one[1] = {7};
    const Bytes rank1 = npy::encode(npy::DType::Int64, one, Bytes(56));
    CHECK(contains(std::string(rank1.begin(), rank1.begin() + 128), "'shape': (7,), }"));
    const Bytes rank0 = npy::encode(npy::DType::Bool, {}, Bytes(1));
    CHECK(contains(std::string(rank0.begin(), rank0.end()),
                   "'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
  }

  TEST_CASE("accepted header variants") {
    SUBCASE("format 2.0 and 3.0") {
      for (const int major : {2, 3}) {
        const npy::Array a = npy::decode(make_npy(major, dict("<i4", "(2,)"), Bytes(8, 1)));
        CHECK(a.dtype == npy::DType::Int32);
        CHECK(a.shape == std::vector<int64_t>{2});
      }
    }
    SUBCASE("numpy's growth padding, double quotes, key order, no trailing comma") {
      const npy::Header h = npy::parse_header_dict(
          "{\"shape\": (3, 4),\"fortran_order\":False, 'descr':'<f2'}" + std::string(40, ' ') + "\n");
      CHECK(h.dtype == npy::DType::Float16);
      CHECK(h.shape == std::vector<int64_t>{3, 4});
      CHECK_FALSE(h.fortran_order);
    }
    SUBCASE("Python 2 long dims, '=' and 1-byte orders") {
      CHECK(npy::parse_header_dict(dict("=f8", "(2L, 3L)")).shape == std::vector<int64_t>{2, 3});
      CHECK(npy::parse_header_dict(dict("<u1", "(1,)")).dtype == npy::DType::UInt8);
      CHECK(npy::parse_header_dict(dict(">b1", "(1,)")).dtype == npy::DType::Bool);
    }
    SUBCASE("rank 8 and zero-size arrays") {
      CHECK(npy::parse_header_dict(dict("<f4", "(1, 1, 1, 1, 1, 1, 1, 2)")).shape.size() == 8);
      const npy::Array empty = npy::decode(make_npy(1, dict("<f4", "(0, 1000000)")));
      CHECK(empty.data.size() == 0);
      CHECK(empty.shape == std::vector<int64_t>{0, 1000000});
    }
    SUBCASE("fortran order is parsed (and rejected by decode)") {
      CHECK(npy::parse_header_dict(dict("<f4", "(2, 3)", "True")).fortran_order);
    }
  }

  TEST_CASE("hostile preambles") {
    const auto fails_with = [](const Bytes& bytes, const std::string& part) {
      const std::string message = decode_error(bytes);
      CAPTURE(message);
      CHECK(message.rfind("bad.npy: ", 0) == 0);  // names the file
      CHECK(contains(message, part));
    };
    fails_with({}, "truncated");
    fails_with({0x93, 'N', 'U', 'M'}, "truncated");
    fails_with({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}, "bad magic");
    fails_with({0x93, 'N', 'U', 'M', 'P', 'X', 1, 0, 0, 0}, "bad magic");
    fails_with(make_npy(4, dict("<f4", "()"), Bytes(4)), "version 4.0");
    Bytes minor_version = make_npy(1, dict("<f4", "()"), Bytes(4));
    minor_version[7] = 1;  // version 1.1
    fails_with(minor_version, "version 1.1");
    fails_with({0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 5}, "header length field");
    fails_with({0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 5, 0, 0}, "header length field");
    fails_with(make_npy(1, "{}", {}, 500), "beyond the end of the file");
    fails_with(make_npy(2, "{}", {}, 0xffffffffLL), "beyond the end of the file");
    Bytes huge_header = make_npy(2, dict("<f4", "()"), Bytes(2 << 20, ' '), 2 << 20);
    fails_with(huge_header, "implausibly large");
  }

  TEST_CASE("hostile header dicts") {
    const struct {
      std::string text;
      std::string part;
    } cases[] = {
        {"", "expected '{'"},
        {"[1, 2]", "not a dict"},
        {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
        {"{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'"},
        {"{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", "duplicate key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False, 'fortran_order': False, 'shape': ()}", "duplicate key"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'shape': ()}", "duplicate key 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'foo': 1}", "unexpected key 'foo'"},
        {"{'descr': '<f4", "unterminated string"},
        {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}", "escape"},
        {"{descr: '<f4'}", "expected a string"},
        {"{'descr' '<f4'}", "expected ':'"},
        {"{'descr': '<f4' 'fortran_order': False}", "expected ',' or '}'"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': ()}", "True or False"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", "True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", "must be a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}", "expected ',' or ')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}", "expected an integer"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", "expected ',' or ')'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3)}", "negative dimension -1"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "64 bits"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,)}", "64 bits"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}", "rank above 8"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ()} junk", "unexpected text"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': ()", "expected ',' or '}'"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", "structured"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': ()}", "unsupported dtype descr '<c8'"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': ()}", "unsupported dtype"},
        {"{'descr': '<U10', 'fortran_order': False, 'shape': ()}", "unsupported dtype"},
        {"{'descr': '<f3', 'fortran_order': False, 'shape': ()}", "unsupported dtype"},
        {"{'descr': 'f4', 'fortran_order': False, 'shape': ()}", "unsupported dtype"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': ()}", "big-endian"},
        {"{'descr': '|i8', 'fortran_order': False, 'shape': ()}", "byte order"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.text);
      const std::string message = header_error(c.text);
      CAPTURE(message);
      CHECK(contains(message, c.part));
      // decode() reports the same problem, naming the file.
      const std::string from_file = decode_error(make_npy(1, c.text));
      CHECK(from_file.rfind("bad.npy: ", 0) == 0);
      CHECK(contains(from_file, c.part));
    }
    CHECK(contains(decode_error(make_npy(1, "{'descr': '\x80'}")), "non-ASCII"));
    CHECK(contains(decode_error(make_npy(1, std::string("{'descr'\0: 1}", 13))), "control"));
  }

  TEST_CASE("hostile shapes and data") {
    const auto fails_with = [](const Bytes& bytes, const std::string& part) {
      const std::string message = decode_error(bytes);
      CAPTURE(message);
      CHECK(message.rfind("bad.npy: ", 0) == 0);
      CHECK(contains(message, part));
    };
    // Element count or byte count beyond 64 bits.
    fails_with(make_npy(1, dict("<f4", "(4294967296, 4294967296, 4)")), "more elements than fit");
    fails_with(make_npy(1, dict("<f8", "(2305843009213693952,)")), "more bytes than fit");
    // Huge but representable: must fail on the size check, not by trying to allocate it.
    fails_with(make_npy(1, dict("<f4", "(1000000000, 1000000000)"), Bytes(16)), "data is truncated");
    // Short and long data.
    const std::string short_data = decode_error(make_npy(1, dict("<f4", "(2, 3)"), Bytes(20)));
    CHECK(contains(short_data, "data is truncated"));
    CHECK(contains(short_data, "float32 [2, 3]"));
    CHECK(contains(short_data, "24 bytes"));
    CHECK(contains(short_data, "20 data bytes"));
    fails_with(make_npy(1, dict("<f4", "()"), Bytes(3)), "data is truncated");
    fails_with(make_npy(1, dict("<f4", "(2,)"), Bytes(9)), "1 unexpected bytes");
    // Fortran order.
    const std::string fortran = decode_error(make_npy(1, dict("<f4", "(2, 3)", "True"), Bytes(24)));
    CHECK(contains(fortran, "fortran_order is True"));
    CHECK(contains(fortran, "C-order"));
    // Bools other than 0 and 1.
    Bytes bools(3, 1);
    bools[2] = 2;
    fails_with(make_npy(1, dict("|b1", "(3,)"), bools), "bool element 2 has byte value 2");
  }

  TEST_CASE("shape helpers") {
    CHECK(npy::shape_string({}) == "[]");
    const int64_t shape[4] = {1, 3, 224, 224};
    CHECK(npy::shape_string(shape) == "[1, 3, 224, 224]");
    CHECK(npy::element_count({}) == 1);
    CHECK(npy::element_count(shape) == 150528);
    CHECK(npy::byte_count(npy::DType::Float16, shape) == 301056);
    const int64_t negative[2] = {2, -1};
    CHECK_THROWS_WITH_AS(npy::element_count(negative), doctest::Contains("negative dimension -1"),
                         npy::Error);
    const int64_t rank9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_THROWS_WITH_AS(npy::element_count(rank9), doctest::Contains("rank 9"), npy::Error);
    const int64_t big[2] = {INT64_MAX, 4};
    CHECK_THROWS_AS(npy::byte_count(npy::DType::Float32, big), npy::Error);
    CHECK_THROWS_AS(npy::encode(npy::DType::Float32, negative, Bytes(8)), npy::Error);
    const int64_t two[1] = {2};
    CHECK_THROWS_WITH_AS(npy::encode(npy::DType::Float32, two, Bytes(7)), doctest::Contains("do not match"),
                         npy::Error);
  }

  TEST_CASE("files: errors name the file, writes are atomic") {
    TempDir dir;
    const std::string missing = (dir.path / "missing.npy").string();
    CHECK_THROWS_WITH_AS(npy::read_file(missing), doctest::Contains((missing + ": cannot open").c_str()),
                         npy::Error);
    CHECK_THROWS_WITH_AS(npy::read_file(dir.path.string()), doctest::Contains("is a directory"), npy::Error);

    const std::string path = (dir.path / "t.npy").string();
    { std::ofstream(path, std::ios::binary) << "\x93NUMPY\x01"; }
    CHECK_THROWS_WITH_AS(npy::read_file(path), doctest::Contains((path + ": truncated").c_str()), npy::Error);

    // Overwriting replaces the file whole.
    const int64_t shape[1] = {2};
    const int32_t values[2] = {7, -8};
    npy::write_file(path, npy::DType::Int32, shape, {reinterpret_cast<const unsigned char*>(values), 8});
    const npy::Array a = npy::read_file(path);
    CHECK(a.dtype == npy::DType::Int32);
    CHECK(reinterpret_cast<const int32_t*>(a.data.data())[1] == -8);
    CHECK(dir.entries() == std::vector<std::string>{"t.npy"});

    // A failing write leaves nothing behind, and says where.
    const std::string nowhere = (dir.path / "no-such-dir" / "x.npy").string();
    CHECK_THROWS_WITH_AS(npy::write_file(nowhere, npy::DType::Int32, shape,
                                         {reinterpret_cast<const unsigned char*>(values), 8}),
                         doctest::Contains("no-such-dir"), npy::Error);
    CHECK_THROWS_AS(npy::write_file((dir.path / "y.npy").string(), npy::DType::Int32, shape,
                                    {reinterpret_cast<const unsigned char*>(values), 4}),
                    npy::Error);
    CHECK(dir.entries() == std::vector<std::string>{"t.npy"});

    // The two-phase write: nothing visible under the final name until the commit.
    const std::string final_path = (dir.path / "z.npy").string();
    const std::string temp = npy::write_temp_file(final_path, npy::DType::Int32, shape,
                                                  {reinterpret_cast<const unsigned char*>(values), 8});
    CHECK_FALSE(fs::exists(final_path));
    CHECK(fs::exists(temp));
    npy::commit_temp_file(temp, final_path);
    CHECK_FALSE(fs::exists(temp));
    CHECK(npy::read_file(final_path).shape == std::vector<int64_t>{2});
  }

}  // TEST_SUITE
