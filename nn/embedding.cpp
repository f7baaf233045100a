// Differentiable embedding and the Embedding module (nn/embedding.h).
#include "nn/embedding.h"

#include <fmt/format.h>

#include "nn/autograd.h"
#include "nn/dispatch.h"

namespace tritium {

namespace {

// PyTorch's check and normalisation of padding_idx against the number of rows.
std::optional<int64_t> normalised_padding(const char* op, std::optional<int64_t> padding_idx, int64_t num) {
  if (!padding_idx) return std::nullopt;
  int64_t p = *padding_idx;
  if (p >= num || p < -num)
    fail("{}: Padding_idx must be within num_embeddings (padding_idx = {}, num_embeddings = {})", op, p, num);
  return p < 0 ? p + num : p;
}

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm) {
  if (max_norm) fail("embedding: max_norm is not supported (the rows are read as they are; renormalise the weight first)");
  int64_t pad = -1;
  if (weight.defined() && weight.dim() >= 1) pad = normalised_padding("embedding", padding_idx, weight.size(0)).value_or(-1);
  return nn::call("embedding", {weight, indices}, ops::Attrs{{"padding_idx", pad}});
}

namespace nn {

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad, Generator& gen)
    : num_embeddings(num), embedding_dim(dim) {
  if (num < 0 || dim < 0)
    fail("Embedding: num_embeddings ({}) and embedding_dim ({}) must be >= 0", num, dim);
  padding_idx = normalised_padding("Embedding", pad, num);
  NoGradGuard no_grad;
  Tensor w = ops::randn({num, dim}, gen, DType::f32);
  if (padding_idx) {
    Tensor row = w.as_strided({dim}, {1}, *padding_idx * dim);
    ops::fill_(row, ops::Scalar(0.0));
  }
  weight = register_parameter("weight", w);
}

Embedding::Embedding(const Tensor& w, std::optional<int64_t> pad) {
  if (!w.defined() || w.dim() != 2)
    fail("Embedding.from_pretrained: Embeddings parameter is expected to be 2-dimensional, got {}",
         w.defined() ? w.str() : std::string("an undefined tensor"));
  num_embeddings = w.size(0), embedding_dim = w.size(1);
  padding_idx = normalised_padding("Embedding.from_pretrained", pad, num_embeddings);
  weight = register_parameter("weight", w.detach());
}

std::shared_ptr<Embedding> Embedding::from_pretrained(const Tensor& w, bool freeze, std::optional<int64_t> pad) {
  std::shared_ptr<Embedding> e(new Embedding(w, pad));
  if (freeze) e->weight.requires_grad_(false);
  return e;
}

Tensor Embedding::forward(const Tensor& indices) { return tritium::embedding(indices, weight, padding_idx); }

std::string Embedding::str() const {
  std::string s = fmt::format("Embedding({}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s + ")";
}

}  // namespace nn
}  // namespace tritium
