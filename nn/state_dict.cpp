#include "nn/state_dict.h"

#include "common/error.h"

namespace tritium::nn {

StateDict::StateDict(const io::TensorMap& tensors) {
  for (const auto& [name, t] : tensors) insert(name, t);
}

void StateDict::insert(std::string name, Tensor tensor) {
  if (name.empty()) fail("StateDict::insert: the key is empty");
  if (index_.contains(name)) fail("StateDict::insert: key \"{}\" is already present", name);
  index_.emplace(name, items_.size());
  items_.emplace_back(std::move(name), std::move(tensor));
}

const Tensor* StateDict::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

const Tensor& StateDict::at(const std::string& name) const {
  const Tensor* t = find(name);
  if (!t) fail("StateDict: no key \"{}\" ({} keys)", name, items_.size());
  return *t;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : items_) out.push_back(name);
  return out;
}

io::TensorMap StateDict::to_map() const {
  io::TensorMap out;
  for (const auto& [name, t] : items_) out.emplace(name, t);
  return out;
}

}  // namespace tritium::nn
