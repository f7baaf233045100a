// An ordered name -> tensor dictionary: what Module::state_dict() returns and load_state_dict()
// reads (PyTorch's OrderedDict of the same name). Keys keep their insertion order (PyTorch's key
// order: a module's parameters, then its persistent buffers, then its children's entries); a
// lookup by name is a hash lookup. Built from an io::TensorMap (a file's tensors, by name) too.
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/safetensors.h"

namespace tritium::nn {

using runtime::Tensor;

class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;
  StateDict() = default;
  explicit StateDict(const io::TensorMap& tensors);  // in the map's (sorted) order

  // Appends an entry; an empty name or one already present is an error.
  void insert(std::string name, Tensor tensor);
  bool contains(const std::string& name) const { return index_.contains(name); }
  const Tensor* find(const std::string& name) const;
  const Tensor& at(const std::string& name) const;  // an error naming the key when absent
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  const std::vector<Item>& items() const { return items_; }
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }
  io::TensorMap to_map() const;

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace tritium::nn
