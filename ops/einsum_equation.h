// torch.einsum's equation: parsed and checked against the operands' shapes (PyTorch's rules and
// messages, with the equation and the position of a bad character), giving each dim of each
// operand a label id. The lowering to tensor ops is nn/einsum.cpp.
#pragma once
#include <string>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

struct EinsumEquation {
  // Label ids: 'A'-'Z' are 0-25, 'a'-'z' 26-51 (PyTorch's order: an implicit output lists upper
  // case first), then one id per broadcast ellipsis dim, 52 + j, j = 0 the leftmost.
  static constexpr int kLetters = 52;
  std::vector<std::vector<int>> operands;  // per operand, the label of each dim (ellipsis expanded)
  std::vector<int> output;                 // the output's labels, in order
  std::vector<int64_t> sizes;              // per label id: its size broadcast over the operands; -1: unused
  int num_labels() const { return static_cast<int>(sizes.size()); }
  static std::string label_name(int id);   // "i", "B", "ellipsis dim 0"
};

// Errors (tritium::Error, "einsum(): ..." as PyTorch): a character that is not a letter, '.',
// ',', ' ' or '->' (with its index in the equation), a '.' outside an ellipsis, two ellipses in
// one operand, more or fewer operands than the equation names, a number of subscripts that does
// not match an operand's dims, an output subscript twice or missing from the inputs, a repeated
// subscript whose sizes differ within an operand, and sizes that do not broadcast across operands.
EinsumEquation parse_einsum(const std::string& equation, const std::vector<Shape>& shapes);

// The order of contraction, from the shapes alone: each operand holds its distinct subscripts,
// less those only it holds and the output does not keep (summed before any product). While two
// or more operands are left, the pair whose result is smallest is contracted (greedy on the
// intermediate sizes, as opt_einsum's "greedy"; ties go to the leftmost pair): the result takes
// the first one's place and the second is removed. A step sums the subscripts that neither the
// output nor another operand still holds.
struct EinsumStep {
  size_t first, second;       // positions in the list of operands left before this step
  std::vector<bool> summed;   // per label id
};
std::vector<EinsumStep> einsum_contraction_path(const EinsumEquation& eq);

}  // namespace tritium::ops
