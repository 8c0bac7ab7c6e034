// The .npy reader and writer.
#include "graphfuse/npy.h"

#include <filesystem>

#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;

// Bytes numpy 1.x writes for np.array([[1, 2, 3], [4, 5, 6]], dtype='<f4'), header included.
std::string numpy_f32_2x3() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(118 - header.size() - 1, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(118);
  out += '\0';
  out += header;
  const float v[6] = {1, 2, 3, 4, 5, 6};
  out.append(reinterpret_cast<const char*>(v), sizeof v);
  return out;
}

TEST(Npy, ReadsWhatNumpyWrites) {
  Tensor t = parse_npy(numpy_f32_2x3());
  EXPECT_EQ(t.type_string(), "f32[2,3]");
  expect_values(t, {2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kF64, DType::kI64, DType::kI32, DType::kI8, DType::kU8, DType::kBool}) {
    Tensor src = testing::to_dtype(testing::f32({2, 1, 2}, {0, 1, 1, 0}), dt);
    Tensor back = parse_npy(to_npy_bytes(src));
    EXPECT_EQ(back.type_string(), src.type_string());
    expect_values(back, {2, 1, 2}, {0, 1, 1, 0});
  }
  Tensor scalar = parse_npy(to_npy_bytes(Tensor::scalar<float>(2.5f)));
  expect_values(scalar, {}, {2.5});
  Tensor empty = parse_npy(to_npy_bytes(Tensor(DType::kI64, {0, 3})));
  EXPECT_EQ(empty.type_string(), "i64[0,3]");
  Tensor one = parse_npy(to_npy_bytes(testing::f32({1}, {7})));
  expect_values(one, {1}, {7});
}

TEST(Npy, HeaderIsPaddedTo64BytesAndEndsWithNewline) {
  const std::string bytes = to_npy_bytes(testing::f32({3}, {1, 2, 3}));
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');
  EXPECT_NE(bytes.find("'shape': (3,)"), std::string::npos);
}

TEST(Npy, Bf16IsWrittenAsF32) {
  Tensor bf = testing::to_dtype(testing::f32({2}, {1.5f, -3.0f}), DType::kBF16);
  Tensor back = parse_npy(to_npy_bytes(bf));
  EXPECT_EQ(back.type_string(), "f32[2]");
  expect_values(back, {2}, {1.5, -3.0});
}

TEST(Npy, Version2And3HeadersAreRead) {
  for (char version : {'\x02', '\x03'}) {
    std::string v1 = numpy_f32_2x3();
    const std::string header = v1.substr(10, 118);
    std::string v2("\x93NUMPY", 6);
    v2 += version;
    v2 += '\0';
    const uint32_t len = static_cast<uint32_t>(header.size());
    v2.append(reinterpret_cast<const char*>(&len), 4);
    v2 += header + v1.substr(128);
    expect_values(parse_npy(v2), {2, 3}, {1, 2, 3, 4, 5, 6});
  }
}

TEST(Npy, FortranOrderAndUnknownDtypesAreRefused) {
  std::string f = numpy_f32_2x3();
  f.replace(f.find("False"), 5, "True ");
  expect_error([&] { parse_npy(f, "'a.npy'"); }, ErrorCode::kUnsupported, {"'a.npy'", "Fortran"});
  for (const char* descr : {"<c8", ">f4", "<u2", "<U3"}) {
    std::string d = numpy_f32_2x3();
    d.replace(d.find("<f4"), 3, descr);
    expect_error([&] { parse_npy(d, "'b.npy'"); }, ErrorCode::kUnsupported, {"'b.npy'", descr});
  }
}

TEST(Npy, MalformedFilesAreParseErrors) {
  const std::string good = numpy_f32_2x3();
  expect_error([&] { parse_npy("", "x"); }, ErrorCode::kParseError, {"magic"});
  expect_error([&] { parse_npy("hello world, not numpy", "x"); }, ErrorCode::kParseError, {"magic"});
  expect_error([&] { parse_npy(good.substr(0, 40), "x"); }, ErrorCode::kParseError, {"truncated header"});
  expect_error([&] { parse_npy(good.substr(0, good.size() - 4), "x"); }, ErrorCode::kParseError, {"holds 20 bytes"});
  std::string shape = good;
  shape.replace(shape.find("(2, 3)"), 6, "(2, x)");
  expect_error([&] { parse_npy(shape, "x"); }, ErrorCode::kParseError, {"shape"});
  std::string huge = good;
  huge.replace(huge.find("(2, 3)"), 6, "(999999999999999, 999999999999999)");
  expect_error([&] { parse_npy(huge, "x"); }, ErrorCode::kParseError, {});
  std::string no_descr = good;
  no_descr.replace(no_descr.find("'descr'"), 7, "'dexxx'");
  expect_error([&] { parse_npy(no_descr, "x"); }, ErrorCode::kParseError, {"descr"});
  std::string version = good;
  version[6] = '\x09';
  expect_error([&] { parse_npy(version, "x"); }, ErrorCode::kParseError, {"version 9"});
}

TEST(Npy, FilesRoundTripAndMissingFilesAreIoErrors) {
  const auto path = std::filesystem::temp_directory_path() / ("gf_npy_" + std::to_string(::getpid()) + ".npy");
  write_npy(path.string(), testing::i64({3}, {1, -2, 3}));
  expect_values(read_npy(path.string()), {3}, {1, -2, 3});
  std::filesystem::remove(path);
  expect_error([&] { read_npy("/nonexistent/x.npy"); }, ErrorCode::kIoError, {"/nonexistent/x.npy"});
}

}  // namespace
}  // namespace gf
