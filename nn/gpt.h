// A GPT language model (issue 31 item 1) in nanoGPT's shape, built from the library's modules:
// token and position embeddings, n_layer pre-norm blocks (LayerNorm, causal self-attention through
// the fused scaled_dot_product_attention kernels, LayerNorm, a 4x MLP with GELU), a final
// LayerNorm and an output head tied to the token embedding. Text generation (greedy, temperature,
// top-k, top-p) reuses a per-layer key/value cache. Include "nn/gpt.h" (docs/gpt.md).
//
//   nn::GPT model(nn::GPTConfig{.block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128}, gen);
//   Tensor logits = model(tokens);                    // tokens [B, T] i64 -> [B, T, vocab]
//   Tensor loss = model.loss(tokens, targets);        // mean cross-entropy over B * T
//   Tensor out = model.generate(prompt, {.max_new_tokens = 200, .top_k = 40});
//
// Parameter names are nanoGPT's (so a PyTorch user, and scripts/gpt_reference.py, recognise them):
// transformer.wte.weight, transformer.wpe.weight, transformer.h.<i>.{ln_1, attn.c_attn, attn.c_proj,
// ln_2, mlp.c_fc, mlp.c_proj}.{weight, bias}, transformer.ln_f.{weight, bias}. The head has no
// parameter of its own: it multiplies by transformer.wte.weight (nanoGPT's lm_head.weight is the same
// tensor, and PyTorch's named_parameters lists it once, under the embedding's name).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/containers.h"
#include "nn/embedding.h"
#include "nn/module.h"

namespace tritium::nn {

struct GPTConfig {
  int64_t vocab_size = 256;  // bytes
  int64_t block_size = 256;  // the context: the longest sequence the position embedding covers
  int64_t n_layer = 6;
  int64_t n_head = 6;
  int64_t n_embd = 384;      // divisible by n_head
  double dropout = 0.0;      // after the embeddings, the attention projection and the MLP
  bool bias = true;          // biases in the Linear layers and the LayerNorms (nanoGPT's `bias`)
  // Activation checkpointing of every block (nn/checkpoint.h, Hugging Face's
  // gradient_checkpointing): while recording, a block keeps only its input, and backward
  // recomputes it (dropout replays the same mask). Same gradients, less memory, one more forward.
  bool gradient_checkpointing = false;
  // With gradient_checkpointing: how many blocks, from the first, are checkpointed (-1: every
  // one; Megatron's recompute_num_layers, "block" method). Leaving the last ones plain trades
  // memory for time: their recomputation would run right away in backward anyway.
  int64_t checkpoint_blocks = -1;
  // Errors name the field: sizes below 1, n_embd not divisible by n_head, dropout outside [0, 1).
  void validate() const;
};

// One layer's keys and values of the sequence so far: [B, n_head, block_size, head_dim] buffers
// of which the first `length` positions are filled.
struct KVCache {
  std::vector<Tensor> keys, values;  // one per layer
  int64_t length = 0;
  int64_t batch = 0;
};

// nanoGPT's LayerNorm: torch.nn.LayerNorm with an optional bias (weight ones, bias zeros).
class GPTLayerNorm : public Module {
 public:
  GPTLayerNorm(int64_t n, bool bias);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LayerNorm"; }
  int64_t n;
  Tensor weight, bias;  // bias undefined without bias

 protected:
  void parameters_moved() override;

 private:
  Tensor zero_bias_;  // the functional layer_norm takes both or neither
};

// Causal self-attention: one Linear makes q, k and v ([B, T, 3C] split in three), the heads go
// through scaled_dot_product_attention(is_causal), c_proj mixes them back.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const GPTConfig& cfg, Generator& gen);
  Tensor forward(const Tensor& x) override;
  // x holds the next x.size(1) positions after the cache's `length` filled ones: their keys and
  // values are written into the cache (layer `layer`) and the queries attend to every cached
  // position. Either the cache is empty (a prompt: causal) or x holds one position.
  Tensor forward_cached(const Tensor& x, KVCache& cache, size_t layer);
  std::string type_name() const override { return "CausalSelfAttention"; }
  int64_t n_head, n_embd;
  std::shared_ptr<Linear> c_attn, c_proj;
  std::shared_ptr<Dropout> resid_dropout;

 private:
  Tensor heads(const Tensor& t) const;  // [B, T, C] -> [B, H, T, C / H] (a view)
};

class GPTMLP : public Module {
 public:
  GPTMLP(const GPTConfig& cfg, Generator& gen);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MLP"; }
  std::shared_ptr<Linear> c_fc, c_proj;
  std::shared_ptr<Dropout> dropout;
};

// x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class GPTBlock : public Module {
 public:
  GPTBlock(const GPTConfig& cfg, Generator& gen);
  Tensor forward(const Tensor& x) override;
  Tensor forward_cached(const Tensor& x, KVCache& cache, size_t layer);
  std::string type_name() const override { return "Block"; }
  std::shared_ptr<GPTLayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<GPTMLP> mlp;
};

// How generate() picks each next token.
struct GenerationConfig {
  int64_t max_new_tokens = 100;
  double temperature = 1.0;  // > 0 unless greedy; the logits are divided by it
  int64_t top_k = 0;         // 0: all tokens; otherwise keep the k most likely (at most vocab_size)
  double top_p = 1.0;        // in (0, 1]: keep the smallest set of most likely tokens whose mass >= top_p
  bool greedy = false;       // argmax (temperature, top_k and top_p unused)
  uint64_t seed = 0;         // of the sampling generator
  bool use_cache = true;     // false: recompute the whole (cropped) sequence at every step
};

class GPT : public Module {
 public:
  // Initialisation as nanoGPT's: Linear and Embedding weights N(0, 0.02), biases zero, the
  // residual projections (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)), drawn from `gen`.
  explicit GPT(GPTConfig cfg, Generator& gen = ops::default_generator());
  // tokens [B, T] (integers in [0, vocab_size), T <= block_size) -> logits [B, T, vocab_size].
  Tensor forward(const Tensor& tokens) override;
  // Mean cross-entropy of forward(tokens) against targets [B, T].
  Tensor loss(const Tensor& tokens, const Tensor& targets);
  // The logits of the next positions given the cache (tokens [B, T], the cache's length + T <=
  // block_size), filling the cache; with last_only only the last position's ([B, 1, vocab_size]).
  // Inference only (no autograd is recorded).
  Tensor forward_cached(const Tensor& tokens, KVCache& cache, bool last_only = false);
  // An empty cache for `batch` sequences, on the parameters' device and dtype.
  KVCache make_cache(int64_t batch) const;
  // prompt [B, T] or [T] (i64) followed by max_new_tokens generated tokens ([B, T + new] or [T +
  // new]). Past block_size tokens the model sees the last block_size ones (nanoGPT's crop); the
  // cache then holds shifted positions, so each such step recomputes the window. Runs in eval mode
  // without autograd (the training flag is restored). step_logits, when given, receives each
  // step's next-token logits [B, vocab_size] (after no filtering or scaling). Errors: an empty or
  // too long prompt, tokens out of range, a bad GenerationConfig (naming the field).
  Tensor generate(const Tensor& prompt, const GenerationConfig& gen_cfg, std::vector<Tensor>* step_logits = nullptr);
  Tensor generate(const std::vector<int64_t>& prompt, const GenerationConfig& gen_cfg);

  std::string type_name() const override { return "GPT"; }
  const GPTConfig& config() const { return cfg_; }
  // Parameters without the position embedding (nanoGPT's get_num_params reports these).
  int64_t num_parameters_without_positions() const;

  std::shared_ptr<ModuleDict> transformer;  // wte, wpe, drop, h, ln_f
  std::shared_ptr<Embedding> wte, wpe;
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<ModuleList> h;
  std::vector<std::shared_ptr<GPTBlock>> blocks;  // h's children, typed
  std::shared_ptr<GPTLayerNorm> ln_f;

 private:
  Tensor embed(const Tensor& tokens, int64_t start);  // wte(tokens) + wpe(start .. start + T)
  Tensor head(const Tensor& x);                        // ln_f, then x wte^T
  void check_tokens(const Tensor& tokens, const char* what, int64_t start) const;
  GPTConfig cfg_;
};

// Sampling helpers of generate(), usable on any logits [B, V]: the logits with the tokens that
// top_k / top_p remove set to -inf (top_k 0 and top_p 1 remove none; at least one token always
// stays), and one token per row (i64 [B]) drawn from softmax(logits / temperature) after that
// filtering, or the argmax when greedy. Errors as generate()'s.
Tensor filter_logits(const Tensor& logits, int64_t top_k, double top_p);
Tensor sample_next_token(const Tensor& logits, const GenerationConfig& cfg, Generator& gen);
// The errors generate() raises for a GenerationConfig, given the vocabulary size.
void check_generation_config(const GenerationConfig& cfg, int64_t vocab_size);

}  // namespace tritium::nn
