// Attention and Transformer layers as torch.nn's: MultiheadAttention, TransformerEncoderLayer,
// TransformerDecoderLayer and the TransformerEncoder / TransformerDecoder stacks, with PyTorch's
// arguments, submodule and parameter names (state_dict keys equal torch.nn's), initialisation,
// mask conventions and repr. Include "nn/transformer.h" (docs/nn.md).
//
// Masks, as PyTorch's: a bool mask marks with true what may NOT be attended to; a floating mask
// is added to the attention scores. attn_mask is [L, S] or [batch * heads, L, S];
// key_padding_mask is [batch, S] ([S] for unbatched input). is_causal is a hint that attn_mask is
// the causal mask (it must then be given, as in PyTorch): without other masks and weights, the
// fused causal attention kernel runs instead of the mask.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/containers.h"
#include "nn/module.h"

namespace tritium::nn {

// The out_proj of MultiheadAttention: a Linear under the class name PyTorch prints.
class NonDynamicallyQuantizableLinear : public Linear {
 public:
  using Linear::Linear;
  std::string type_name() const override { return "NonDynamicallyQuantizableLinear"; }
};

// torch.nn.MultiheadAttention. Parameters: in_proj_weight [3E, E] (or q_proj_weight [E, E],
// k_proj_weight [E, kdim], v_proj_weight [E, vdim] when kdim / vdim differ from E), in_proj_bias
// [3E] (with bias), out_proj.weight / out_proj.bias; xavier_uniform_ projections, zero biases.
// kdim / vdim 0 mean embed_dim. PyTorch's add_bias_kv and add_zero_attn are not supported.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true, int64_t kdim = 0,
                     int64_t vdim = 0, bool batch_first = false, Generator& gen = ops::default_generator());

  // (attn_output, attn_weights): attn_output [L, N, E] ([N, L, E] with batch_first, [L, E]
  // unbatched); attn_weights with need_weights [N, L, S] averaged over heads, or [N, heads, L, S]
  // with average_attn_weights false (undefined without need_weights).
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = {}, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                    bool is_causal = false);
  // {query, key, value[, key_padding_mask[, attn_mask]]} -> {attn_output, attn_weights}
  // (need_weights true; an undefined tensor stands for an absent mask).
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  using Module::forward;
  std::string type_name() const override { return "MultiheadAttention"; }

  int64_t embed_dim, kdim, vdim, num_heads, head_dim;
  double dropout;
  bool batch_first;
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight;  // per the layout above
  Tensor in_proj_bias;                                                    // undefined without bias
  std::shared_ptr<NonDynamicallyQuantizableLinear> out_proj;

 protected:
  void parameters_moved() override;

 private:
  bool same_embed_dim() const { return kdim == embed_dim && vdim == embed_dim; }
  Generator* gen_;
};

enum class TransformerActivation { relu, gelu };

// Arguments of TransformerEncoderLayer / TransformerDecoderLayer (PyTorch's defaults).
struct TransformerLayerOptions {
  int64_t d_model = 0, nhead = 0;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  TransformerActivation activation = TransformerActivation::relu;
  double layer_norm_eps = 1e-5;
  bool batch_first = false, norm_first = false, bias = true;
};

// torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block, each with a residual
// connection and LayerNorm (after: post-norm, the default; before with norm_first).
class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(const TransformerLayerOptions& options, Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  // {src[, src_mask[, src_key_padding_mask]]} -> {output}
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  std::string type_name() const override { return "TransformerEncoderLayer"; }

  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;
};

// torch.nn.TransformerDecoderLayer: self-attention, attention over the encoder's output (memory),
// a feed-forward block; residuals and LayerNorms as the encoder layer's.
class TransformerDecoderLayer : public Module {
 public:
  explicit TransformerDecoderLayer(const TransformerLayerOptions& options, Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  // {tgt, memory[, tgt_mask[, memory_mask[, tgt_key_padding_mask[, memory_key_padding_mask]]]]}
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  using Module::forward;
  std::string type_name() const override { return "TransformerDecoderLayer"; }

  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
};

// torch.nn.TransformerEncoder: num_layers encoder layers ("layers.0", ...) and an optional final
// norm. PyTorch deep-copies one layer, so its layers start equal; here each layer is built by
// `make_layer` (called num_layers times), so they start as the factory makes them.
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const std::function<std::shared_ptr<TransformerEncoderLayer>()>& make_layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, {}, {}, false); }
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  std::string type_name() const override { return "TransformerEncoder"; }

  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> norm;  // null without a final norm
};

// torch.nn.TransformerDecoder: num_layers decoder layers and an optional final norm (see
// TransformerEncoder for how layers are made).
class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const std::function<std::shared_ptr<TransformerDecoderLayer>()>& make_layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs) override;
  using Module::forward;
  std::string type_name() const override { return "TransformerDecoder"; }

  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> norm;
};

// torch.nn.Transformer.generate_square_subsequent_mask as a bool mask: true above the diagonal
// (position i may not attend to j > i). PyTorch's returns the float form (-inf / 0).
Tensor causal_mask(int64_t size, Device device = default_device());

}  // namespace tritium::nn
