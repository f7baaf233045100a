// The safetensors reader and writer of io/safetensors.h. The checks follow the reference
// implementation's (huggingface/safetensors): header size bounded, each byte range matching its
// dtype and shape, the ranges tiling the data exactly (no overlap, no gap, nothing past the end).
#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "io/json.h"

namespace tritium::io {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so is every target");

namespace {

struct DTypeName {
  DType dtype;
  const char* name;
};
// The format's names (safetensors' Dtype enum) for the dtypes Tritium has.
constexpr DTypeName kDTypeNames[] = {
    {DType::f64, "F64"}, {DType::f32, "F32"},         {DType::f16, "F16"},         {DType::bf16, "BF16"},
    {DType::i64, "I64"}, {DType::i32, "I32"},         {DType::i16, "I16"},         {DType::i8, "I8"},
    {DType::u64, "U64"}, {DType::u32, "U32"},         {DType::u16, "U16"},         {DType::u8, "U8"},
    {DType::i1, "BOOL"}, {DType::f8e4m3, "F8_E4M3"}, {DType::f8e5m2, "F8_E5M2"},
};

// The reference reader refuses headers above 100 MB (a corrupt length must not allocate gigabytes).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

std::string known_dtype_names() {
  std::vector<std::string> names;
  for (const auto& d : kDTypeNames) names.push_back(d.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

struct Entry {
  std::string name;
  DType dtype;
  runtime::Tensor::Shape shape;
  uint64_t begin, end;
};

Entry read_entry(const std::string& name, const Json& v, std::string_view what) {
  std::string where = fmt::format("{}: tensor \"{}\"", what, name);
  v.as_object(where);
  for (const auto& [key, _] : v.as_object(where))
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail("{}: unexpected key \"{}\" (expected dtype, shape, data_offsets)", where, key);
  Entry e{name, DType::invalid, {}, 0, 0};
  const std::string& dtype = v.at("dtype", where).as_string(where + " dtype");
  e.dtype = dtype_from_safetensors(dtype);
  if (e.dtype == DType::invalid)
    fail("{}: unknown dtype \"{}\" (known: {})", where, dtype, known_dtype_names());
  uint64_t numel = 1;
  bool overflow = false;
  for (const Json& s : v.at("shape", where).as_array(where + " shape")) {
    int64_t n = s.as_int64(where + " shape");
    if (n < 0) fail("{}: negative size {} in its shape", where, n);
    e.shape.push_back(n);
    if (n != 0 && numel > UINT64_MAX / static_cast<uint64_t>(n)) overflow = true;
    numel *= static_cast<uint64_t>(n);
  }
  const auto& offsets = v.at("data_offsets", where).as_array(where + " data_offsets");
  if (offsets.size() != 2) fail("{}: data_offsets must be [begin, end], got {} numbers", where, offsets.size());
  int64_t b = offsets[0].as_int64(where + " data_offsets"), en = offsets[1].as_int64(where + " data_offsets");
  if (b < 0 || en < b) fail("{}: data_offsets [{}, {}] are not an interval (expected 0 <= begin <= end)", where, b, en);
  e.begin = static_cast<uint64_t>(b);
  e.end = static_cast<uint64_t>(en);
  uint64_t element = static_cast<uint64_t>(dtype_bytes(e.dtype));
  if (overflow || numel > UINT64_MAX / element || numel * element != e.end - e.begin)
    fail("{}: shape [{}] of {} needs {} bytes, but data_offsets [{}, {}] hold {}", where, fmt::join(e.shape, ", "),
         dtype, overflow ? std::string("too many") : std::to_string(numel * element), e.begin, e.end, e.end - e.begin);
  return e;
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  for (const auto& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  fail("safetensors: dtype {} has no safetensors name", dtype_name(dtype));
}

DType dtype_from_safetensors(std::string_view name) {
  for (const auto& d : kDTypeNames)
    if (name == d.name) return d.dtype;
  return DType::invalid;
}

Safetensors parse_safetensors(std::string_view bytes, Device device, std::string_view what) {
  if (bytes.size() < 8)
    fail("{}: truncated: {} bytes, fewer than the 8-byte header length", what, bytes.size());
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeaderBytes)
    fail("{}: header length {} is larger than the 100 MB limit (corrupt or not a safetensors file)", what, header_len);
  if (header_len > bytes.size() - 8)
    fail("{}: truncated: the header claims {} bytes but only {} follow the length", what, header_len, bytes.size() - 8);
  std::string_view header = bytes.substr(8, header_len);
  if (header.empty() || header[0] != '{') fail("{}: the header does not start with '{{' (not a safetensors file?)", what);
  Json json = parse_json(header, fmt::format("{}: header", what));
  std::string_view data = bytes.substr(8 + header_len);

  Safetensors out;
  std::vector<Entry> entries;
  for (const auto& [name, v] : json.as_object(fmt::format("{}: header", what))) {
    if (name == "__metadata__") {
      std::string where = fmt::format("{}: __metadata__", what);
      for (const auto& [key, value] : v.as_object(where))
        out.metadata[key] = value.as_string(fmt::format("{} value of \"{}\"", where, key));
      continue;
    }
    entries.push_back(read_entry(name, v, what));
  }

  // The byte ranges must tile [0, data.size()) exactly, as the reference reader demands.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : by_offset) {
    if (e->end > data.size())
      fail("{}: tensor \"{}\": data_offsets [{}, {}] run past the end of the data ({} bytes): the file is truncated "
           "or the offsets are wrong", what, e->name, e->begin, e->end, data.size());
    if (e->begin < covered)
      fail("{}: tensor \"{}\" (data_offsets [{}, {}]) overlaps tensor \"{}\" (data_offsets [{}, {}])", what, e->name,
           e->begin, e->end, previous->name, previous->begin, previous->end);
    if (e->begin > covered)
      fail("{}: bytes [{}, {}) of the data belong to no tensor (before \"{}\")", what, covered, e->begin, e->name);
    covered = e->end;
    if (e->end > e->begin || !previous) previous = e;
  }
  if (covered != data.size())
    fail("{}: bytes [{}, {}) at the end of the data belong to no tensor", what, covered, data.size());

  for (const Entry& e : entries) {
    runtime::Tensor t = runtime::Tensor::empty(e.shape, e.dtype, Device::cpu());
    if (e.end > e.begin) std::memcpy(t.raw_data(), data.data() + e.begin, e.end - e.begin);
    out.tensors[e.name] = device.is_cpu() ? t : t.to(device);
  }
  return out;
}

Safetensors load_safetensors(const std::string& path, Device device) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("safetensors: cannot open '{}' for reading", path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("safetensors: error while reading '{}'", path);
  return parse_safetensors(bytes, device, path);
}

std::string serialize_safetensors(const TensorMap& tensors, const Metadata& metadata) {
  // Widest elements first, then by name: each tensor starts aligned for its dtype.
  std::vector<std::pair<const std::string*, const runtime::Tensor*>> order;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail("safetensors: a tensor may not be named __metadata__");
    if (!t.defined()) fail("safetensors: tensor \"{}\" is undefined", name);
    safetensors_dtype_name(t.dtype());  // an error for dtypes the format lacks
    order.emplace_back(&name, &t);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->element_size() > b.second->element_size();
  });

  std::string header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      header += json_quote(k) + ":" + json_quote(v);
      first = false;
    }
    header += "}";
  }
  std::string data;
  for (const auto& [name, t] : order) {
    runtime::Tensor host = t->detach().contiguous().to(Device::cpu());
    uint64_t begin = data.size();
    if (host.nbytes() > 0) data.append(static_cast<const char*>(host.raw_data()), static_cast<size_t>(host.nbytes()));
    header += fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", header.size() > 1 ? "," : "",
                          json_quote(*name), safetensors_dtype_name(host.dtype()), fmt::join(host.shape(), ","), begin,
                          data.size());
  }
  header += "}";
  while ((8 + header.size()) % 8 != 0) header += ' ';
  uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  std::string bytes = serialize_safetensors(tensors, metadata);
  std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail("safetensors: cannot open '{}' for writing", temp);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) fail("safetensors: error while writing '{}'", temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    fail("safetensors: cannot rename '{}' to '{}'", temp, path);
  }
}

}  // namespace tritium::io
