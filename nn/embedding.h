// Embedding lookups, differentiable (torch.nn.functional.embedding) and as a module
// (torch.nn.Embedding). Include "nn/embedding.h" (docs/nn.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "nn/module.h"

namespace tritium {

// weight[indices] ([*indices.shape, dim]); the gradient reaches weight only, the row padding_idx
// (negative counts from the end) getting none. indices i64 or i32, any shape; an index outside
// [0, num_embeddings) is an error. max_norm (renormalising the rows read) is not supported: giving
// it is an error. sparse gradients are not supported.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt);

namespace nn {

// torch.nn.Embedding: weight [num_embeddings, embedding_dim] drawn from N(0, 1) (from `gen`), the
// row padding_idx zeroed.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            Generator& gen = ops::default_generator());
  // Embedding.from_pretrained: the module takes `weight` (2-D) as its parameter; freeze turns its
  // gradient off.
  static std::shared_ptr<Embedding> from_pretrained(const Tensor& weight, bool freeze = true,
                                                    std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  std::string str() const override;

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  // normalised to [0, num_embeddings)
  Tensor weight;

 protected:
  std::string type_name() const override { return "Embedding"; }
  void parameters_moved() override { weight = parameter("weight"); }

 private:
  Embedding(const Tensor& weight, std::optional<int64_t> padding_idx);
};

}  // namespace nn
}  // namespace tritium
