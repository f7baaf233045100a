#include "nn/containers.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::nn {

namespace {

// A Python-style index (negative counts from the end) checked against size.
size_t checked_index(int64_t i, size_t size, const char* container) {
  int64_t n = static_cast<int64_t>(size);
  int64_t j = i < 0 ? i + n : i;
  if (j < 0 || j >= n) fail("{}: index {} is out of range for {} modules", container, i, size);
  return static_cast<size_t>(j);
}

}  // namespace

// ---- Sequential -----------------------------------------------------------------------------------

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

Sequential::Sequential(std::vector<NamedModule> modules) {
  for (auto& [name, m] : modules) push_back(name, std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(named_children().size()), std::move(module));
}

void Sequential::push_back(const std::string& name, std::shared_ptr<Module> module) {
  register_module(name, std::move(module));
}

std::shared_ptr<Module> Sequential::ptr(int64_t i) const {
  return named_children()[checked_index(i, size(), "Sequential")].second;
}

Tensor Sequential::forward(const Tensor& x) {
  std::vector<Tensor> out = forward_many({x});
  if (out.size() != 1)
    fail("Sequential::forward: the last module returned {} outputs; call forward_many for several", out.size());
  return out[0];
}

std::vector<Tensor> Sequential::forward_many(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> values = inputs;
  for (auto& [name, m] : named_children()) values = m->forward_many(values);
  return values;
}

// ---- ModuleList -----------------------------------------------------------------------------------

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(items_.size()), module);
  items_.push_back(std::move(module));
}

void ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules)
    if (!m) fail("ModuleList::extend: a null module");
  for (const auto& m : modules) push_back(m);
}

void ModuleList::extend(const ModuleList& other) { extend(std::vector<std::shared_ptr<Module>>(other.items_)); }

void ModuleList::insert(int64_t index, std::shared_ptr<Module> module) {
  if (!module) fail("ModuleList::insert: a null module");
  int64_t n = static_cast<int64_t>(items_.size());
  int64_t j = index < 0 ? index + n : index;  // Python's list.insert clamps; PyTorch's too
  j = std::clamp<int64_t>(j, 0, n);
  items_.insert(items_.begin() + j, std::move(module));
  renumber();
}

void ModuleList::renumber() {
  std::vector<NamedModule> named;
  for (size_t i = 0; i < items_.size(); ++i) named.emplace_back(std::to_string(i), items_[i]);
  reset_children(std::move(named));
}

std::shared_ptr<Module> ModuleList::ptr(int64_t i) const { return items_[checked_index(i, items_.size(), "ModuleList")]; }

std::string ModuleList::str() const {
  if (items_.empty()) return type_name() + "()";
  // Runs of identical reprs print once: "(0-2): 3 x Linear(...)".
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < items_.size()) {
    std::string repr = items_[start]->str();
    size_t end = start;
    while (end + 1 < items_.size() && items_[end + 1]->str() == repr) ++end;
    std::string line = start == end ? fmt::format("({}): {}", start, repr)
                                    : fmt::format("({}-{}): {} x {}", start, end, end - start + 1, repr);
    std::string indented;
    for (char c : line) {
      indented += c;
      if (c == '\n') indented += "  ";
    }
    lines.push_back(indented);
    start = end + 1;
  }
  return type_name() + "(\n  " + fmt::format("{}", fmt::join(lines, "\n  ")) + "\n)";
}

// ---- ModuleDict -----------------------------------------------------------------------------------

ModuleDict::ModuleDict(std::vector<NamedModule> modules) {
  for (auto& [name, m] : modules) insert(name, std::move(m));
}

void ModuleDict::insert(const std::string& name, std::shared_ptr<Module> module) {
  if (contains(name))
    replace_module(name, std::move(module));
  else
    register_module(name, std::move(module));
}

bool ModuleDict::contains(const std::string& name) const {
  for (const auto& [n, m] : named_children())
    if (n == name) return true;
  return false;
}

std::shared_ptr<Module> ModuleDict::ptr(const std::string& name) const {
  for (const auto& [n, m] : named_children())
    if (n == name) return m;
  fail("ModuleDict: no module named \"{}\" (keys: {})", name, fmt::join(keys(), ", "));
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [n, m] : named_children()) out.push_back(n);
  return out;
}

}  // namespace tritium::nn
