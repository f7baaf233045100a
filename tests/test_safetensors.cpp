// io/safetensors.h and io/json.h: every dtype written and read back on every backend (strided,
// 0-dim and empty tensors included), the metadata, a file written by Python's safetensors read
// here, and each malformed file (truncated, offsets out of range / overlapping / leaving gaps,
// an unknown dtype, bad JSON, a shape that disagrees with its bytes) refused with a clear error.
#include "test_support.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "fixtures_dir.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "ops/ops.h"

namespace tt = tritium::test;
namespace io = tritium::io;
using tritium::DType;
using tritium::Error;
using tritium::Tensor;
using tritium::runtime::Device;

namespace {

template <class F>
void check_error(F&& f, const std::string& needle) {
  try {
    f();
    BOOST_ERROR("expected tritium::Error containing: " << needle);
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, "message: " << e.what());
  }
}

// A file of the given header text followed by `data_bytes` bytes of data.
std::string file_with_header(const std::string& header, size_t data_bytes) {
  uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(data_bytes, '\x01');
}

// The raw bytes of a tensor's row-major values.
std::vector<uint8_t> bytes_of(const Tensor& t) {
  Tensor h = t.contiguous().to(Device::cpu());
  std::vector<uint8_t> out(static_cast<size_t>(h.nbytes()));
  if (!out.empty()) std::memcpy(out.data(), h.raw_data(), out.size());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_safetensors)

BOOST_AUTO_TEST_CASE(round_trip_every_dtype) {
  tt::for_each_backend([&](const tt::Backend& be) {
    io::TensorMap tensors;
    const DType dtypes[] = {DType::f64, DType::f32,  DType::f16, DType::bf16, DType::i64,    DType::i32,    DType::i16,
                            DType::i8,  DType::u8,   DType::u16, DType::u32,  DType::u64,    DType::i1,     DType::f8e4m3,
                            DType::f8e5m2};
    tritium::ops::Generator gen(5);
    for (DType d : dtypes) {
      // Random bytes through an integer draw then a bit-preserving view is not available for every
      // dtype, so draw values in range and convert (every dtype gets distinct, non-zero data).
      Tensor v = tritium::ops::to_dtype(tritium::ops::randint(1, 100, {3, 5}, gen, DType::i64, be.device), d);
      tensors[std::string("t_") + tritium::dtype_name(d)] = v;
    }
    // A transposed view, a 0-dim tensor and empty ones are written as their row-major values.
    Tensor base = tritium::ops::rand({4, 3}, gen, DType::f32, be.device);
    tensors["strided"] = base.t();
    tensors["scalar"] = tritium::ops::full({}, tritium::ops::Scalar(-2.5), DType::f64, be.device);
    tensors["empty"] = Tensor::empty({0, 7}, DType::f16, be.device);
    tensors["empty1d"] = Tensor::empty({0}, DType::i1, be.device);
    io::Metadata meta = {{"format", "pt"}, {"quote \" and \\ and \n", "value \"with\" escapes \x01 ü"}};

    std::string bytes = io::serialize_safetensors(tensors, meta);
    uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    BOOST_TEST((8 + header) % 8 == 0u);  // data 8-byte aligned
    io::Safetensors back = io::parse_safetensors(bytes, be.device, "round trip");
    BOOST_TEST((back.metadata == meta));
    BOOST_REQUIRE_EQUAL(back.tensors.size(), tensors.size());
    for (const auto& [name, t] : tensors) {
      BOOST_TEST_CONTEXT("tensor " << name) {
        const Tensor& r = back.tensors.at(name);
        BOOST_TEST((r.dtype() == t.dtype()));
        BOOST_TEST((r.shape() == t.shape()));
        BOOST_TEST(r.is_contiguous());
        BOOST_TEST((r.device() == be.device));
        BOOST_TEST((bytes_of(r) == bytes_of(t)));
      }
    }
    BOOST_TEST((back.tensors.at("strided").to_vector<float>() == base.t().contiguous().to_vector<float>()));

    // Through a file (written to a temporary name and renamed).
    auto path = std::filesystem::temp_directory_path() / ("tritium_safetensors_" + be.name + ".safetensors");
    io::save_safetensors(path.string(), tensors, meta);
    BOOST_TEST(!std::filesystem::exists(path.string() + ".tmp"));
    io::Safetensors from_file = io::load_safetensors(path.string(), be.device);
    BOOST_TEST((bytes_of(from_file.tensors.at("t_f32")) == bytes_of(tensors.at("t_f32"))));
    std::filesystem::remove(path);
  });
}

// A file written by Python's safetensors (tests/fixtures/safetensors/python_written.safetensors,
// from safetensors.numpy.save_file; its values are spelled out here).
BOOST_AUTO_TEST_CASE(reads_a_file_written_by_python) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto path = tt::fixtures_dir() / "safetensors" / "python_written.safetensors";
    io::Safetensors f = io::load_safetensors(path.string(), be.device);
    BOOST_TEST(f.metadata.at("format") == "pt");
    BOOST_TEST(f.metadata.at("note") == "written by safetensors.numpy \"quoted\"");
    BOOST_TEST(f.tensors.size() == 10u);
    auto f64 = f.tensors.at("f64").to_vector<double>();
    BOOST_TEST((f.tensors.at("f64").shape() == std::vector<int64_t>{2, 3}));
    BOOST_TEST(f64[0] == 1.5);
    BOOST_TEST(f64[1] == -2.25);
    BOOST_TEST(std::isinf(f64[2]));
    BOOST_TEST(std::isnan(f64[3]));
    BOOST_TEST(std::signbit(f64[5]));
    BOOST_TEST((f.tensors.at("f32").to_vector<float>() == std::vector<float>{3.0f, -1e-30f, 65504.0f}));
    auto f16 = f.tensors.at("f16").to_vector<tritium::f16_t>();
    BOOST_TEST(tt::to_float(f16[1]) == -2.5f);
    BOOST_TEST((f.tensors.at("i64").to_vector<int64_t>() == std::vector<int64_t>{-(int64_t(1) << 62), 7}));
    BOOST_TEST(f.tensors.at("i32").dim() == 0);
    BOOST_TEST(f.tensors.at("i32").to_vector<int32_t>()[0] == -123456);
    BOOST_TEST((f.tensors.at("i16").to_vector<int16_t>() == std::vector<int16_t>{300, -300, 1}));
    BOOST_TEST((f.tensors.at("i8").to_vector<int8_t>() == std::vector<int8_t>{-128, 127}));
    BOOST_TEST((f.tensors.at("u8").to_vector<uint8_t>() == std::vector<uint8_t>{0, 255, 9}));
    BOOST_TEST((f.tensors.at("bool").to_vector<bool>() == std::vector<bool>{true, false, true}));
    BOOST_TEST((f.tensors.at("empty").shape() == std::vector<int64_t>{0, 3}));
  });
}

BOOST_AUTO_TEST_CASE(malformed_files_are_refused) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  BOOST_TEST(io::parse_safetensors(file_with_header(ok, 8), Device::cpu(), "ok").tensors.size() == 1u);

  check_error([] { io::parse_safetensors(std::string(5, '\0'), Device::cpu(), "tiny"); },
              "tiny: truncated: 5 bytes, fewer than the 8-byte header length");
  check_error([&] { io::parse_safetensors(file_with_header(ok, 8).substr(0, 30), Device::cpu(), "cut"); },
              "cut: truncated: the header claims 54 bytes but only 22 follow the length");
  check_error([&] { io::parse_safetensors(file_with_header(ok, 5), Device::cpu(), "short data"); },
              "short data: tensor \"a\": data_offsets [0, 8] run past the end of the data (5 bytes)");
  check_error([&] { io::parse_safetensors(file_with_header(ok, 12), Device::cpu(), "long data"); },
              "bytes [8, 12) at the end of the data belong to no tensor");
  {
    std::string huge(8, '\0');
    uint64_t n = uint64_t(1) << 40;
    std::memcpy(huge.data(), &n, 8);
    check_error([&] { io::parse_safetensors(huge, Device::cpu(), "huge"); }, "header length 1099511627776 is larger");
  }
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                               R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                               8),
                              Device::cpu(), "overlap");
      },
      "tensor \"b\" (data_offsets [4, 8]) overlaps tensor \"a\" (data_offsets [0, 8])");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                              Device::cpu(), "gap");
      },
      "bytes [0, 4) of the data belong to no tensor");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
                              Device::cpu(), "reversed");
      },
      "data_offsets [8, 0] are not an interval");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8),
                              Device::cpu(), "dtype");
      },
      "dtype: tensor \"a\": unknown dtype \"C64\" (known: F64, F32");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                              Device::cpu(), "shape");
      },
      "tensor \"a\": shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] hold 8");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                              Device::cpu(), "neg");
      },
      "negative size -2");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8),
                              Device::cpu(), "json");
      },
      "json: header: bad JSON at byte 53: unexpected end of text inside an object");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                               R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                               8),
                              Device::cpu(), "dup");
      },
      "duplicate key \"a\"");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"__metadata__":{"n":3}})", 0), Device::cpu(), "meta");
      },
      "meta: __metadata__ value of \"n\": expected a string, got a number");
  check_error([] { io::parse_safetensors(file_with_header("[1, 2]", 0), Device::cpu(), "array"); },
              "the header does not start with '{'");
  check_error(
      [] {
        io::parse_safetensors(file_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8),
                              Device::cpu(), "extra");
      },
      "unexpected key \"x\"");
  check_error([] { io::load_safetensors("/nonexistent/dir/x.safetensors", Device::cpu()); },
              "cannot open '/nonexistent/dir/x.safetensors' for reading");
  check_error([] { io::serialize_safetensors({{"u", Tensor()}}); }, "tensor \"u\" is undefined");
}

BOOST_AUTO_TEST_CASE(json_reader) {
  io::Json j = io::parse_json(R"( {"a": [1, -2.5e3, true, null, "x\u00e9\ud83d\ude00\n"], "b": {}} )", "j");
  const auto& a = j.at("a", "j").as_array("a");
  BOOST_TEST(a[0].as_int64("a0") == 1);
  BOOST_TEST(a[1].as_double("a1") == -2500.0);
  BOOST_TEST(a[2].as_bool("a2"));
  BOOST_TEST(a[3].is_null());
  BOOST_TEST(a[4].as_string("a4") == "x\xc3\xa9\xf0\x9f\x98\x80\n");
  BOOST_TEST(j.at("b", "j").as_object("b").empty());
  BOOST_TEST(io::json_quote("a\"b\\c\n\x01") == "\"a\\\"b\\\\c\\n\\u0001\"");
  check_error([] { io::parse_json("[1,]", "t"); }, "t: bad JSON at byte 3: expected a JSON value");
  check_error([] { io::parse_json("{\"a\":1} x", "t"); }, "unexpected text after the JSON value");
  check_error([] { io::parse_json("[01]", "t"); }, "expected ',' or ']'");
  check_error([] { io::parse_json("\"\\q\"", "t"); }, "an unknown escape");
  check_error([] { io::parse_json(std::string(200, '['), "t"); }, "nesting deeper than 128 levels");
  check_error([] { io::parse_json("1.5", "t").as_int64("n"); }, "n: expected an integer that fits 64 bits, got 1.5");
  check_error([] { io::parse_json("{}", "t").at("k", "obj"); }, "obj: missing key \"k\"");
}

BOOST_AUTO_TEST_SUITE_END()
