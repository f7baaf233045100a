// Model and optimiser checkpoints in safetensors (io/safetensors.h), the layout of PyTorch's
// safetensors.torch.save_file(model.state_dict(), path): flat dotted names ("0.weight",
// "encoder.norm.bias"), each tensor in its own dtype, metadata {"format": "pt"} plus the
// caller's. A file written here loads with safetensors.torch.load_file and
// model.load_state_dict(...) in PyTorch, and PyTorch's files load here.
//
// The optimiser's state goes to a second file (OptimizerState's layout, nn/optim.h): tensors
// "state.<i>.<name>", hyperparameters in the metadata.
//
// Loading reads and checks the whole file before anything is copied: a truncated or corrupt
// file, a missing or unexpected key (strict), a shape or dtype-kind mismatch, or an optimiser
// state of another class or shape is an error, and the module / optimiser is left as it was.
#pragma once
#include <string>

#include "nn/module.h"
#include "nn/optim.h"

namespace tritium::nn {

void save(const Module& module, const std::string& path, const io::Metadata& metadata = {});
void save(const StateDict& state_dict, const std::string& path, const io::Metadata& metadata = {});
// The file's tensors (sorted by name: safetensors keeps no order), on `device`.
StateDict load(const std::string& path, Device device = Device::cpu());
// load(path) then module.load_state_dict(..., strict).
LoadStateDictResult load(Module& module, const std::string& path, bool strict = true);

void save(const Optimizer& optimizer, const std::string& path);
void load(Optimizer& optimizer, const std::string& path);

}  // namespace tritium::nn
