// Safetensors files (Hugging Face's format, what PyTorch's `safetensors.torch.save_file` writes):
// an 8-byte little-endian header length N, N bytes of JSON mapping each tensor's name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data that follows) plus an
// optional "__metadata__" object of string values, then the raw little-endian bytes. Checkpoints
// (issue 30) and the PyTorch parity fixtures (tests/fixtures/torch/) use it.
//
// Reading is strict: a truncated file, a header past the end, bad JSON, an unknown dtype, a shape
// that disagrees with its byte range, offsets out of range, overlapping or leaving gaps are all
// errors (tritium::Error naming the file, the tensor and the values). Writing pads the header
// with spaces so the data starts 8-byte aligned and orders tensors by element size, then name,
// so every tensor is aligned for its dtype (as the Python writer does).
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "runtime/tensor.h"

namespace tritium::io {

using TensorMap = std::map<std::string, runtime::Tensor>;
using Metadata = std::map<std::string, std::string>;  // "__metadata__": string values only

struct Safetensors {
  TensorMap tensors;
  Metadata metadata;
};

// Reads a file; the tensors are contiguous and live on `device`.
Safetensors load_safetensors(const std::string& path, Device device = default_device());
// The same from the bytes of a file held in memory; `what` names it in errors.
Safetensors parse_safetensors(std::string_view bytes, Device device = default_device(),
                              std::string_view what = "safetensors data");

// Writes the tensors (any device, any strides: each is written as its row-major contiguous
// values) and the metadata. The file is written to a temporary name and renamed, so a reader
// never sees half of it.
void save_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata = {});
std::string serialize_safetensors(const TensorMap& tensors, const Metadata& metadata = {});

// The format's dtype names: "F32" <-> DType::f32, "BOOL" <-> i1, "F8_E4M3" <-> f8e4m3, ...
// dtype_from_safetensors returns DType::invalid for a name it does not know.
const char* safetensors_dtype_name(DType dtype);
DType dtype_from_safetensors(std::string_view name);

}  // namespace tritium::io
