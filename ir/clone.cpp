#include "ir/clone.h"

namespace tritium::ir {

Value* mapped(const ValueMap& map, Value* v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

Op* clone_op(Builder& b, const Op* op, ValueMap& map) {
  std::vector<Value*> operands;
  for (Value* o : op->operands) operands.push_back(mapped(map, o));
  std::vector<Type> types;
  for (const Value* r : op->results) types.push_back(r->type);
  const SourceLoc loc = b.loc;
  b.loc = op->loc;
  Op* copy = b.create(op->kind, std::move(operands), std::move(types), op->attrs);
  b.loc = loc;
  for (size_t i = 0; i < op->results.size(); ++i) map[op->results[i]] = copy->results[i];
  Function& f = b.function();
  for (const Block* region : op->regions) {
    Block* nb = f.new_block(copy);
    copy->regions.push_back(nb);
    for (const Value* a : region->args) map[a] = f.add_block_arg(nb, a->type);
    Builder inner(f);
    inner.set_insertion_end(nb);
    for (const Op* o : region->ops) clone_op(inner, o, map);
  }
  return copy;
}

}  // namespace tritium::ir
