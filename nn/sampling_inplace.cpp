// In-place samplers with autograd's in-place rules (nn/sampling_inplace.h).
#include "nn/sampling_inplace.h"

#include <functional>
#include <utility>
#include <vector>

#include "nn/autograd.h"

namespace tritium {

namespace {

// Samples x's shape, dtype and device with `sample` (a raw in-place sampler on a fresh
// contiguous tensor, so the counters follow x's row-major order) and writes it through copy_.
Tensor& sample_inplace(Tensor& x, const char* op, const std::function<void(Tensor&)>& sample) {
  if (!x.defined()) fail("{}: the tensor is undefined", op);
  Tensor fresh = Tensor::empty(x.shape(), x.dtype(), x.device());
  sample(fresh);
  // Recorded against x with no gradient (PyTorch's UniformBackward, NormalBackward...): the
  // values x had get none from here on. (Copying an untracked source would leave x's old history
  // in place: Tensor::copy_ keeps it when its source does not require grad.)
  Tensor src = nn::record(std::move(fresh), {x}, "SampleBackward",
                          [](const Tensor&) { return std::vector<Tensor>{Tensor()}; });
  return x.copy_(src);
}

}  // namespace

Tensor& uniform_(Tensor& x, double from, double to, ops::Generator& gen) {
  return sample_inplace(x, "uniform_", [&](Tensor& t) { ops::uniform_(t, from, to, gen); });
}
Tensor& normal_(Tensor& x, double mean, double std, ops::Generator& gen) {
  return sample_inplace(x, "normal_", [&](Tensor& t) { ops::normal_(t, mean, std, gen); });
}
Tensor& exponential_(Tensor& x, double lambd, ops::Generator& gen) {
  return sample_inplace(x, "exponential_", [&](Tensor& t) { ops::exponential_(t, lambd, gen); });
}
Tensor& geometric_(Tensor& x, double p, ops::Generator& gen) {
  return sample_inplace(x, "geometric_", [&](Tensor& t) { ops::geometric_(t, p, gen); });
}
Tensor& log_normal_(Tensor& x, double mean, double std, ops::Generator& gen) {
  return sample_inplace(x, "log_normal_", [&](Tensor& t) { ops::log_normal_(t, mean, std, gen); });
}
Tensor& cauchy_(Tensor& x, double median, double sigma, ops::Generator& gen) {
  return sample_inplace(x, "cauchy_", [&](Tensor& t) { ops::cauchy_(t, median, sigma, gen); });
}
Tensor& bernoulli_(Tensor& x, double p, ops::Generator& gen) {
  return sample_inplace(x, "bernoulli_", [&](Tensor& t) { ops::bernoulli_(t, p, gen); });
}
Tensor& bernoulli_(Tensor& x, const Tensor& p, ops::Generator& gen) {
  return sample_inplace(x, "bernoulli_", [&](Tensor& t) { ops::bernoulli_(t, p.detach(), gen); });
}
Tensor& random_(Tensor& x, ops::Generator& gen) {
  return sample_inplace(x, "random_", [&](Tensor& t) { ops::random_(t, gen); });
}
Tensor& random_(Tensor& x, int64_t to, ops::Generator& gen) {
  return sample_inplace(x, "random_", [&](Tensor& t) { ops::random_(t, to, gen); });
}
Tensor& random_(Tensor& x, int64_t from, std::optional<int64_t> to, ops::Generator& gen) {
  return sample_inplace(x, "random_", [&](Tensor& t) { ops::random_(t, from, to, gen); });
}

}  // namespace tritium
