// The checks every backend makes before it issues a collective.
#include "dist/process_group.h"

#include "common/error.h"

namespace tritium::dist {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

void ProcessGroup::check_tensor(const Tensor& t, const char* collective) const {
  if (!t.defined()) fail("dist::{} ({}): the tensor is undefined", collective, backend());
  if (!t.is_contiguous())
    fail("dist::{} ({}): the tensor must be contiguous (shape {}); call .contiguous()", collective, backend(),
         ir::shape_str(t.shape()));
}

void ProcessGroup::check_list(const std::vector<Tensor>& list, const Tensor& like, const char* collective,
                              const char* what) const {
  if (static_cast<int>(list.size()) != size())
    fail("dist::{} ({}): {} has {} tensors, but the group has {} ranks", collective, backend(), what, list.size(),
         size());
  for (size_t i = 0; i < list.size(); ++i) {
    check_tensor(list[i], collective);
    if (list[i].shape() != like.shape() || list[i].dtype() != like.dtype() || list[i].device() != like.device())
      fail("dist::{} ({}): {}[{}] is {} {} on {}, expected {} {} on {}", collective, backend(), what, i,
           ir::shape_str(list[i].shape()), dtype_name(list[i].dtype()), list[i].device().str(),
           ir::shape_str(like.shape()), dtype_name(like.dtype()), like.device().str());
  }
}

void ProcessGroup::check_root(int root, const char* collective) const {
  if (root < 0 || root >= size())
    fail("dist::{} ({}): root {} is not a rank of this group (0 to {})", collective, backend(), root, size() - 1);
}

}  // namespace tritium::dist
