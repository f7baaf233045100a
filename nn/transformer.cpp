// MultiheadAttention and the Transformer layers (nn/transformer.h). Attention runs through the
// fused scaled_dot_product_attention kernels when nothing needs the probabilities themselves (no
// mask tensor, no returned weights, no dropout on them); otherwise through the explicit
// softmax(Q K^T / sqrt(d) + mask) V, as PyTorch's math path, so every mask PyTorch accepts works.
#include "nn/transformer.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "nn/autograd.h"
#include "nn/init.h"
#include "nn/tensor_ops.h"

namespace tritium::nn {

namespace {

// One tensor passed as query, key and value (self-attention): the same storage, view and autograd
// identity, as PyTorch's `query is key` test.
bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.storage_offset() == b.storage_offset() && a.shape() == b.shape() &&
         a.strides() == b.strides() && a.autograd() == b.autograd();
}

std::string shape_str(const Tensor& t) { return fmt::format("[{}]", fmt::join(t.shape(), ", ")); }

void check_mask_dtype(const Tensor& mask, const char* what) {
  if (mask.defined() && mask.dtype() != DType::i1 && !is_float(mask.dtype()))
    fail("MultiheadAttention: only bool and floating types of {} are supported, got {}", what,
         dtype_name(mask.dtype()));
}

// scores [N, H, L, S] with a mask applied: bool true -> -inf, floating -> added.
Tensor apply_mask(const Tensor& scores, const Tensor& mask) {
  if (mask.dtype() == DType::i1) return tritium::masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
  return scores + mask.to(scores.dtype());
}

}  // namespace

// ---- MultiheadAttention ---------------------------------------------------------------------------

MultiheadAttention::MultiheadAttention(int64_t embed_dim_, int64_t num_heads_, double dropout_, bool bias,
                                       int64_t kdim_, int64_t vdim_, bool batch_first_, Generator& gen)
    : embed_dim(embed_dim_),
      kdim(kdim_ ? kdim_ : embed_dim_),
      vdim(vdim_ ? vdim_ : embed_dim_),
      num_heads(num_heads_),
      head_dim(0),
      dropout(dropout_),
      batch_first(batch_first_),
      gen_(&gen) {
  if (embed_dim <= 0 || num_heads <= 0)
    fail("MultiheadAttention: embed_dim ({}) and num_heads ({}) must be positive", embed_dim, num_heads);
  if (kdim <= 0 || vdim <= 0) fail("MultiheadAttention: kdim ({}) and vdim ({}) must be positive", kdim, vdim);
  if (embed_dim % num_heads != 0)
    fail("MultiheadAttention: embed_dim must be divisible by num_heads (embed_dim {}, num_heads {})", embed_dim,
         num_heads);
  if (!(dropout >= 0.0 && dropout <= 1.0)) fail("MultiheadAttention: dropout must be in [0, 1], got {}", dropout);
  head_dim = embed_dim / num_heads;
  NoGradGuard no_grad;
  // PyTorch's _reset_parameters: xavier_uniform_ on the projections (the packed [3E, E] matrix as
  // one tensor), zero biases; out_proj keeps Linear's init but a zero bias.
  if (same_embed_dim()) {
    Tensor w = Tensor::empty({3 * embed_dim, embed_dim}, DType::f32);
    init::xavier_uniform_(w, 1.0, gen);
    in_proj_weight = register_parameter("in_proj_weight", w);
  } else {
    auto proj = [&](const char* name, int64_t in) {
      Tensor w = Tensor::empty({embed_dim, in}, DType::f32);
      init::xavier_uniform_(w, 1.0, gen);
      return register_parameter(name, w);
    };
    q_proj_weight = proj("q_proj_weight", embed_dim);
    k_proj_weight = proj("k_proj_weight", kdim);
    v_proj_weight = proj("v_proj_weight", vdim);
  }
  if (bias) in_proj_bias = register_parameter("in_proj_bias", ops::zeros({3 * embed_dim}));
  out_proj = register_module("out_proj", std::make_shared<NonDynamicallyQuantizableLinear>(embed_dim, embed_dim, bias, gen));
  if (bias) init::zeros_(out_proj->bias);
}

void MultiheadAttention::parameters_moved() {
  auto get = [&](const Tensor& held, const char* name) { return held.defined() ? parameter(name) : Tensor(); };
  in_proj_weight = get(in_proj_weight, "in_proj_weight");
  q_proj_weight = get(q_proj_weight, "q_proj_weight");
  k_proj_weight = get(k_proj_weight, "k_proj_weight");
  v_proj_weight = get(v_proj_weight, "v_proj_weight");
  in_proj_bias = get(in_proj_bias, "in_proj_bias");
}

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query_in, const Tensor& key_in,
                                                      const Tensor& value_in, const Tensor& key_padding_mask_in,
                                                      bool need_weights, const Tensor& attn_mask_in,
                                                      bool average_attn_weights, bool is_causal) {
  if (!query_in.defined() || !key_in.defined() || !value_in.defined())
    fail("MultiheadAttention: query, key and value must be defined tensors");
  const bool batched = query_in.dim() == 3;
  if (query_in.dim() != 2 && query_in.dim() != 3)
    fail("MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received {}-D query tensor",
         query_in.dim());
  if (key_in.dim() != query_in.dim() || value_in.dim() != query_in.dim())
    fail("MultiheadAttention: for {} query, expected key and value to be {}D but found {}-D and {}-D tensors",
         batched ? "batched (3-D)" : "unbatched (2-D)", query_in.dim(), key_in.dim(), value_in.dim());
  check_mask_dtype(key_padding_mask_in, "key_padding_mask");
  check_mask_dtype(attn_mask_in, "attn_mask");
  if (is_causal && !attn_mask_in.defined())
    fail("MultiheadAttention: Need attn_mask if specifying the is_causal hint (PyTorch's rule: pass the causal "
         "mask, e.g. nn::causal_mask(L))");

  // Work batch-first [N, L, E] whatever the layout.
  const bool self_attention = same_tensor(query_in, key_in) && same_tensor(key_in, value_in);
  auto to_nle = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return batch_first ? t : t.transpose(0, 1);
  };
  Tensor q_in = to_nle(query_in), k_in = self_attention ? q_in : to_nle(key_in),
         v_in = self_attention ? q_in : to_nle(value_in);
  const int64_t N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);
  if (q_in.size(2) != embed_dim)
    fail("MultiheadAttention: was expecting embedding dimension of {}, but got {}", embed_dim, q_in.size(2));
  if (k_in.size(2) != kdim || v_in.size(2) != vdim)
    fail("MultiheadAttention: key {} and value {} must end in kdim = {} and vdim = {}", shape_str(key_in),
         shape_str(value_in), kdim, vdim);
  if (k_in.size(0) != N || v_in.size(0) != N || v_in.size(1) != S)
    fail("MultiheadAttention: key shape {} does not match value shape {} (or their batch does not match the "
         "query's {})",
         shape_str(key_in), shape_str(value_in), shape_str(query_in));

  // Masks as [N or 1, H or 1, L or 1, S].
  Tensor attn_mask, key_padding_mask;
  if (attn_mask_in.defined()) {
    if (attn_mask_in.dim() == 2) {
      if (attn_mask_in.size(0) != L || attn_mask_in.size(1) != S)
        fail("MultiheadAttention: The shape of the 2D attn_mask is {}, but should be ({}, {}).",
             shape_str(attn_mask_in), L, S);
      attn_mask = attn_mask_in.view({1, 1, L, S});
    } else if (attn_mask_in.dim() == 3) {
      if (attn_mask_in.size(0) != N * num_heads || attn_mask_in.size(1) != L || attn_mask_in.size(2) != S)
        fail("MultiheadAttention: The shape of the 3D attn_mask is {}, but should be ({}, {}, {}).",
             shape_str(attn_mask_in), N * num_heads, L, S);
      attn_mask = attn_mask_in.reshape({N, num_heads, L, S});
    } else {
      fail("MultiheadAttention: attn_mask's dimension {} is not supported (2-D or 3-D)", attn_mask_in.dim());
    }
  }
  if (key_padding_mask_in.defined()) {
    const bool ok = batched ? key_padding_mask_in.dim() == 2 && key_padding_mask_in.size(0) == N &&
                                  key_padding_mask_in.size(1) == S
                            : key_padding_mask_in.dim() == 1 && key_padding_mask_in.size(0) == S;
    if (!ok)
      fail("MultiheadAttention: expecting key_padding_mask shape of ({}), but got {}",
           batched ? fmt::format("{}, {}", N, S) : fmt::format("{}", S), shape_str(key_padding_mask_in));
    key_padding_mask = key_padding_mask_in.reshape({N, 1, 1, S});
  }

  // Projections: one matmul of the packed weight for self-attention, else one per input.
  auto project = [&](const Tensor& x, const Tensor& w, int64_t part) {
    Tensor y = tritium::matmul(x, w.t());
    return in_proj_bias.defined() ? y + tritium::narrow(in_proj_bias, 0, part * embed_dim, embed_dim) : y;
  };
  Tensor q, k, v;
  if (same_embed_dim() && self_attention) {
    Tensor qkv = tritium::matmul(q_in, in_proj_weight.t());
    if (in_proj_bias.defined()) qkv = qkv + in_proj_bias;
    q = tritium::narrow(qkv, 2, 0, embed_dim);
    k = tritium::narrow(qkv, 2, embed_dim, embed_dim);
    v = tritium::narrow(qkv, 2, 2 * embed_dim, embed_dim);
  } else if (same_embed_dim()) {
    q = project(q_in, tritium::narrow(in_proj_weight, 0, 0, embed_dim), 0);
    k = project(k_in, tritium::narrow(in_proj_weight, 0, embed_dim, embed_dim), 1);
    v = project(v_in, tritium::narrow(in_proj_weight, 0, 2 * embed_dim, embed_dim), 2);
  } else {
    q = project(q_in, q_proj_weight, 0);
    k = project(k_in, k_proj_weight, 1);
    v = project(v_in, v_proj_weight, 2);
  }
  auto heads = [&](const Tensor& t, int64_t len) { return t.reshape({N, len, num_heads, head_dim}).transpose(1, 2); };
  q = heads(q, L), k = heads(k, S), v = heads(v, S);  // [N, H, len, head_dim]

  const double p = is_training() ? dropout : 0.0;
  Tensor context, weights;
  const bool only_causal = is_causal && !key_padding_mask.defined();
  if (!need_weights && p == 0.0 && (!attn_mask.defined() || only_causal) && !key_padding_mask.defined()) {
    // The fused kernels: no probabilities materialised; they read the head views through their
    // strides (a copy here would cost a launch per input, forward and backward).
    context = tritium::scaled_dot_product_attention(q, k, v, only_causal);
  } else {
    Tensor scores = tritium::matmul(q * (1.0 / std::sqrt(static_cast<double>(head_dim))), k.transpose(-2, -1));
    if (attn_mask.defined()) scores = apply_mask(scores, attn_mask);
    if (key_padding_mask.defined()) scores = apply_mask(scores, key_padding_mask);
    weights = tritium::softmax(scores, -1);
    if (p > 0.0) weights = tritium::dropout(weights, p, true, *gen_);
    context = tritium::matmul(weights, v);
  }
  Tensor out = (*out_proj)(context.transpose(1, 2).reshape({N, L, embed_dim}));
  if (!batched) out = out.squeeze(0);
  else if (!batch_first) out = out.transpose(0, 1);
  if (need_weights) {
    if (average_attn_weights) weights = tritium::mean(weights, {1});
    if (!batched) weights = weights.squeeze(0);
  } else {
    weights = Tensor();
  }
  return {out, weights};
}

std::vector<Tensor> MultiheadAttention::forward_many(const std::vector<Tensor>& inputs) {
  if (inputs.size() < 3 || inputs.size() > 5)
    fail("MultiheadAttention::forward_many: expected {{query, key, value[, key_padding_mask[, attn_mask]]}}, got {} "
         "inputs",
         inputs.size());
  auto [out, weights] = forward(inputs[0], inputs[1], inputs[2], inputs.size() > 3 ? inputs[3] : Tensor(), true,
                                inputs.size() > 4 ? inputs[4] : Tensor());
  return {out, weights};
}

// ---- layers ---------------------------------------------------------------------------------------

namespace {

void check_layer_options(const TransformerLayerOptions& o, const char* layer) {
  if (o.d_model <= 0 || o.nhead <= 0 || o.dim_feedforward <= 0)
    fail("{}: d_model ({}), nhead ({}) and dim_feedforward ({}) must be positive", layer, o.d_model, o.nhead,
         o.dim_feedforward);
}

Tensor activate(const Tensor& x, TransformerActivation a) {
  return a == TransformerActivation::gelu ? tritium::gelu(x) : tritium::relu(x);
}

const Tensor& input_at(const std::vector<Tensor>& inputs, size_t i) {
  static const Tensor none;
  return i < inputs.size() ? inputs[i] : none;
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerLayerOptions& o, Generator& gen) : options(o) {
  check_layer_options(o, "TransformerEncoderLayer");
  // Registration order = PyTorch's attribute order = its state_dict order.
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(o.d_model, o.nhead, o.dropout, o.bias, 0, 0, o.batch_first, gen));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward, o.bias, gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout, gen));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model, o.bias, gen));
  auto norm = [&] { return std::make_shared<LayerNorm>(std::vector<int64_t>{o.d_model}, o.layer_norm_eps, true, o.bias); };
  norm1 = register_module("norm1", norm());
  norm2 = register_module("norm2", norm());
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout, gen));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout, gen));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                                        bool is_causal) {
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal).first);
  };
  auto ff = [&](const Tensor& x) {
    return (*dropout2)((*linear2)((*dropout)(activate((*linear1)(x), options.activation))));
  };
  Tensor x = src;
  if (options.norm_first) {
    x = x + sa((*norm1)(x));
    x = x + ff((*norm2)(x));
  } else {
    x = (*norm1)(x + sa(x));
    x = (*norm2)(x + ff(x));
  }
  return x;
}

std::vector<Tensor> TransformerEncoderLayer::forward_many(const std::vector<Tensor>& inputs) {
  if (inputs.empty() || inputs.size() > 3)
    fail("TransformerEncoderLayer::forward_many: expected {{src[, src_mask[, src_key_padding_mask]]}}, got {} inputs",
         inputs.size());
  return {forward(inputs[0], input_at(inputs, 1), input_at(inputs, 2))};
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerLayerOptions& o, Generator& gen) : options(o) {
  check_layer_options(o, "TransformerDecoderLayer");
  auto attention = [&] {
    return std::make_shared<MultiheadAttention>(o.d_model, o.nhead, o.dropout, o.bias, 0, 0, o.batch_first, gen);
  };
  self_attn = register_module("self_attn", attention());
  multihead_attn = register_module("multihead_attn", attention());
  linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward, o.bias, gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout, gen));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model, o.bias, gen));
  auto norm = [&] { return std::make_shared<LayerNorm>(std::vector<int64_t>{o.d_model}, o.layer_norm_eps, true, o.bias); };
  norm1 = register_module("norm1", norm());
  norm2 = register_module("norm2", norm());
  norm3 = register_module("norm3", norm());
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout, gen));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout, gen));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout, gen));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                        const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                        bool memory_is_causal) {
  if (!memory.defined()) fail("TransformerDecoderLayer: memory (the encoder's output) is undefined");
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(self_attn->forward(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal).first);
  };
  auto mha = [&](const Tensor& x) {
    return (*dropout2)(multihead_attn
                           ->forward(x, memory, memory, memory_key_padding_mask, false, memory_mask, true,
                                     memory_is_causal)
                           .first);
  };
  auto ff = [&](const Tensor& x) {
    return (*dropout3)((*linear2)((*dropout)(activate((*linear1)(x), options.activation))));
  };
  Tensor x = tgt;
  if (options.norm_first) {
    x = x + sa((*norm1)(x));
    x = x + mha((*norm2)(x));
    x = x + ff((*norm3)(x));
  } else {
    x = (*norm1)(x + sa(x));
    x = (*norm2)(x + mha(x));
    x = (*norm3)(x + ff(x));
  }
  return x;
}

std::vector<Tensor> TransformerDecoderLayer::forward_many(const std::vector<Tensor>& inputs) {
  if (inputs.size() < 2 || inputs.size() > 6)
    fail("TransformerDecoderLayer::forward_many: expected {{tgt, memory[, tgt_mask[, memory_mask[, "
         "tgt_key_padding_mask[, memory_key_padding_mask]]]]}}, got {} inputs",
         inputs.size());
  return {forward(inputs[0], inputs[1], input_at(inputs, 2), input_at(inputs, 3), input_at(inputs, 4),
                  input_at(inputs, 5))};
}

// ---- stacks ---------------------------------------------------------------------------------------

namespace {

template <class Layer>
std::shared_ptr<ModuleList> make_layers(const std::function<std::shared_ptr<Layer>()>& make_layer, int64_t n,
                                        const char* stack) {
  if (n <= 0) fail("{}: num_layers must be positive, got {}", stack, n);
  if (!make_layer) fail("{}: the layer factory is empty", stack);
  auto list = std::make_shared<ModuleList>();
  for (int64_t i = 0; i < n; ++i) {
    std::shared_ptr<Layer> layer = make_layer();
    if (!layer) fail("{}: the layer factory returned null (layer {})", stack, i);
    list->push_back(layer);
  }
  return list;
}

}  // namespace

TransformerEncoder::TransformerEncoder(const std::function<std::shared_ptr<TransformerEncoderLayer>()>& make_layer,
                                       int64_t num_layers, std::shared_ptr<LayerNorm> norm_) {
  layers = register_module("layers", make_layers(make_layer, num_layers, "TransformerEncoder"));
  if (norm_) norm = register_module("norm", std::move(norm_));
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                   bool is_causal) {
  Tensor x = src;
  for (const auto& layer : *layers)
    x = static_cast<TransformerEncoderLayer&>(*layer).forward(x, mask, src_key_padding_mask, is_causal);
  return norm ? (*norm)(x) : x;
}

std::vector<Tensor> TransformerEncoder::forward_many(const std::vector<Tensor>& inputs) {
  if (inputs.empty() || inputs.size() > 3)
    fail("TransformerEncoder::forward_many: expected {{src[, mask[, src_key_padding_mask]]}}, got {} inputs",
         inputs.size());
  return {forward(inputs[0], input_at(inputs, 1), input_at(inputs, 2))};
}

TransformerDecoder::TransformerDecoder(const std::function<std::shared_ptr<TransformerDecoderLayer>()>& make_layer,
                                       int64_t num_layers, std::shared_ptr<LayerNorm> norm_) {
  layers = register_module("layers", make_layers(make_layer, num_layers, "TransformerDecoder"));
  if (norm_) norm = register_module("norm", std::move(norm_));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                   const Tensor& memory_key_padding_mask, bool tgt_is_causal, bool memory_is_causal) {
  Tensor x = tgt;
  for (const auto& layer : *layers)
    x = static_cast<TransformerDecoderLayer&>(*layer).forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                              memory_key_padding_mask, tgt_is_causal,
                                                              memory_is_causal);
  return norm ? (*norm)(x) : x;
}

std::vector<Tensor> TransformerDecoder::forward_many(const std::vector<Tensor>& inputs) {
  if (inputs.size() < 2 || inputs.size() > 6)
    fail("TransformerDecoder::forward_many: expected {{tgt, memory[, tgt_mask[, memory_mask[, "
         "tgt_key_padding_mask[, memory_key_padding_mask]]]]}}, got {} inputs",
         inputs.size());
  return {forward(inputs[0], inputs[1], input_at(inputs, 2), input_at(inputs, 3), input_at(inputs, 4),
                  input_at(inputs, 5))};
}

Tensor causal_mask(int64_t size, Device device) {
  if (size <= 0) fail("causal_mask: size must be positive, got {}", size);
  NoGradGuard no_grad;
  return tritium::triu(ops::ones({size, size}, DType::i1, device), 1);
}

}  // namespace tritium::nn
