#include "runtime/overlap.h"

#include "common/error.h"

namespace tritium::runtime {

void check_no_internal_overlap(const char* op, const Tensor& x) {
  for (int d = 0; d < x.dim(); ++d)
    if (x.size(d) > 1 && x.stride(d) == 0)
      fail("{}: unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location (dimension {} has stride 0). Please clone() the tensor before performing the operation. ({})",
           op, d, x.str());
}

}  // namespace tritium::runtime
