// The containers of torch.nn: Sequential (children applied in order, named "0", "1", ... or by
// the caller, as PyTorch's Sequential(OrderedDict)), ModuleList (an indexable list that has no
// forward) and ModuleDict (modules by name). Their str() is PyTorch's repr (ModuleList folds
// runs of identical modules into "(0-2): 3 x Linear(...)", as PyTorch does).
#pragma once
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace tritium::nn {

namespace detail {
// A module value moved into a shared_ptr, or a shared_ptr to a module passed on.
template <class M>
std::shared_ptr<Module> to_shared_module(M&& m) {
  using T = std::remove_cvref_t<M>;
  if constexpr (std::is_base_of_v<Module, T>)
    return std::make_shared<T>(std::forward<M>(m));
  else
    return std::static_pointer_cast<Module>(std::forward<M>(m));
}
template <class T> struct is_module_ptr : std::false_type {};
template <class T> struct is_module_ptr<std::shared_ptr<T>> : std::is_base_of<Module, T> {};
template <class M>
concept ModuleArg = std::is_base_of_v<Module, std::remove_cvref_t<M>> || is_module_ptr<std::remove_cvref_t<M>>::value;
}  // namespace detail

using NamedModule = std::pair<std::string, std::shared_ptr<Module>>;

class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  // Named children, in order (PyTorch's Sequential(OrderedDict([...]))).
  explicit Sequential(std::vector<NamedModule> named_modules);
  // Sequential(Linear(...), ReLU(), std::make_shared<Linear>(...)): values are moved into
  // shared_ptrs, shared_ptrs are kept.
  template <class... Ms>
    requires(sizeof...(Ms) > 0 && (detail::ModuleArg<Ms> && ...) &&
             !(sizeof...(Ms) == 1 && (std::is_same_v<std::remove_cvref_t<Ms>, Sequential> && ...)))
  explicit Sequential(Ms&&... modules) {
    (push_back(detail::to_shared_module(std::forward<Ms>(modules))), ...);
  }

  void push_back(std::shared_ptr<Module> module);  // named by its position
  void push_back(const std::string& name, std::shared_ptr<Module> module);
  size_t size() const { return named_children().size(); }
  // The i-th module (negative counts from the end; errors when out of range).
  Module& operator[](int64_t i) const { return *ptr(i); }
  std::shared_ptr<Module> ptr(int64_t i) const;
  template <class M> M& at(int64_t i) const { return checked_cast<M>(ptr(i)); }

  Tensor forward(const Tensor& x) override;  // one input, one output (errors otherwise)
  // Each module's outputs are the next one's inputs.
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  std::string type_name() const override { return "Sequential"; }

 private:
  template <class M> M& checked_cast(const std::shared_ptr<Module>& m) const;
};

class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules) { extend(std::move(modules)); }
  template <class... Ms>
    requires(sizeof...(Ms) > 0 && (detail::ModuleArg<Ms> && ...) &&
             !(sizeof...(Ms) == 1 && (std::is_same_v<std::remove_cvref_t<Ms>, ModuleList> && ...)))
  explicit ModuleList(Ms&&... modules) {
    (push_back(detail::to_shared_module(std::forward<Ms>(modules))), ...);
  }

  void push_back(std::shared_ptr<Module> module);
  void extend(const std::vector<std::shared_ptr<Module>>& modules);
  void extend(const ModuleList& other);
  // extend({a, b}): a braced list would otherwise match both overloads above.
  void extend(std::initializer_list<std::shared_ptr<Module>> modules) { extend(std::vector<std::shared_ptr<Module>>(modules)); }
  // Inserts before position `index` (negative counts from the end; index == size() appends) and
  // renumbers the children, as PyTorch's ModuleList.insert.
  void insert(int64_t index, std::shared_ptr<Module> module);
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  Module& operator[](int64_t i) const { return *ptr(i); }
  std::shared_ptr<Module> ptr(int64_t i) const;
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return items_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return items_.end(); }

  std::string str() const override;
  std::string type_name() const override { return "ModuleList"; }

 private:
  void renumber();
  std::vector<std::shared_ptr<Module>> items_;
};

class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  explicit ModuleDict(std::vector<NamedModule> modules);

  // Adds `name`, or replaces the module under a name already present (keeping its position), as
  // PyTorch's d[name] = module.
  void insert(const std::string& name, std::shared_ptr<Module> module);
  bool contains(const std::string& name) const;
  Module& operator[](const std::string& name) const { return *ptr(name); }
  std::shared_ptr<Module> ptr(const std::string& name) const;  // an error naming the key when absent
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<Module>> values() const { return children(); }
  const std::vector<NamedModule>& items() const { return named_children(); }
  size_t size() const { return named_children().size(); }

  std::string type_name() const override { return "ModuleDict"; }
};

template <class M>
M& Sequential::checked_cast(const std::shared_ptr<Module>& m) const {
  auto* p = dynamic_cast<M*>(m.get());
  if (!p) fail("Sequential::at: the module is a {}, not the type asked for", m->type_name());
  return *p;
}

}  // namespace tritium::nn
