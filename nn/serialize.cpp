#include "nn/serialize.h"

namespace tritium::nn {

namespace {

io::Metadata with_format(const io::Metadata& metadata) {
  io::Metadata out = metadata;
  out.emplace("format", "pt");  // what Hugging Face / PyTorch model files carry; the caller's wins
  return out;
}

}  // namespace

void save(const StateDict& state_dict, const std::string& path, const io::Metadata& metadata) {
  io::save_safetensors(path, state_dict.to_map(), with_format(metadata));
}

void save(const Module& module, const std::string& path, const io::Metadata& metadata) {
  save(module.state_dict(), path, metadata);
}

StateDict load(const std::string& path, Device device) { return StateDict(io::load_safetensors(path, device).tensors); }

LoadStateDictResult load(Module& module, const std::string& path, bool strict) {
  return module.load_state_dict(load(path, Device::cpu()), strict);  // copied to each parameter's device
}

void save(const Optimizer& optimizer, const std::string& path) {
  OptimizerState state = optimizer.state_dict();
  io::save_safetensors(path, state.tensors.to_map(), state.metadata);
}

void load(Optimizer& optimizer, const std::string& path) {
  io::Safetensors file = io::load_safetensors(path, Device::cpu());
  optimizer.load_state_dict({StateDict(file.tensors), file.metadata});
}

}  // namespace tritium::nn
