// PrefixStore: another store's keys under "prefix/".
#include "dist/store.h"

namespace tritium::dist {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : prefix_(std::move(prefix)), store_(std::move(store)) {}
void PrefixStore::set(const std::string& k, const Bytes& value) { store_->set(key(k), value); }
Bytes PrefixStore::get(const std::string& k) { return store_->get(key(k)); }
int64_t PrefixStore::add(const std::string& k, int64_t delta) { return store_->add(key(k), delta); }
void PrefixStore::wait(const std::vector<std::string>& ks, Milliseconds timeout) { store_->wait(keys(ks), timeout); }
bool PrefixStore::check(const std::vector<std::string>& ks) { return store_->check(keys(ks)); }
std::vector<std::string> PrefixStore::keys(const std::vector<std::string>& ks) const {
  std::vector<std::string> out;
  for (const auto& k : ks) out.push_back(key(k));
  return out;
}

}  // namespace tritium::dist
