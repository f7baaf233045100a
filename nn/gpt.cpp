// The GPT model, its key/value cache and generate() (nn/gpt.h; docs/gpt.md). Every computation is
// a library op (Tritium kernels); the host only checks arguments and moves token ids.
#include "nn/gpt.h"

#include <cmath>
#include <limits>

#include "common/error.h"
#include "nn/autograd.h"
#include "nn/checkpoint.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "ops/ops.h"
#include "ops/reduce_stats.h"
#include "ops/sampling.h"
#include "ops/sort.h"

namespace tritium::nn {

void GPTConfig::validate() const {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) fail("GPTConfig: {} must be at least 1, got {}", name, v);
  };
  positive("vocab_size", vocab_size);
  positive("block_size", block_size);
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_embd", n_embd);
  if (n_embd % n_head != 0) fail("GPTConfig: n_embd ({}) must be divisible by n_head ({})", n_embd, n_head);
  if (!(dropout >= 0.0 && dropout < 1.0)) fail("GPTConfig: dropout must be in [0, 1), got {}", dropout);
  if (checkpoint_blocks < -1 || checkpoint_blocks > n_layer)
    fail("GPTConfig: checkpoint_blocks must be -1 (all) or in [0, n_layer = {}], got {}", n_layer, checkpoint_blocks);
}

// ---- LayerNorm with an optional bias -------------------------------------------------------------

GPTLayerNorm::GPTLayerNorm(int64_t n_, bool with_bias) : n(n_) {
  NoGradGuard no_grad;
  weight = register_parameter("weight", ops::ones({n}));
  if (with_bias) bias = register_parameter("bias", ops::zeros({n}));
  else zero_bias_ = register_buffer("zero_bias", ops::zeros({n}), /*persistent=*/false);
}

Tensor GPTLayerNorm::forward(const Tensor& x) {
  return tritium::layer_norm(x, {n}, weight, bias.defined() ? bias : zero_bias_, 1e-5);
}

void GPTLayerNorm::parameters_moved() {
  weight = parameter("weight");
  if (bias.defined()) bias = parameter("bias");
  else zero_bias_ = buffer("zero_bias");
}

// ---- attention -------------------------------------------------------------------------------------

CausalSelfAttention::CausalSelfAttention(const GPTConfig& cfg, Generator& gen)
    : n_head(cfg.n_head), n_embd(cfg.n_embd) {
  c_attn = register_module("c_attn", std::make_shared<Linear>(cfg.n_embd, 3 * cfg.n_embd, cfg.bias, gen));
  c_proj = register_module("c_proj", std::make_shared<Linear>(cfg.n_embd, cfg.n_embd, cfg.bias, gen));
  resid_dropout = register_module("resid_dropout", std::make_shared<Dropout>(cfg.dropout));
}

Tensor CausalSelfAttention::heads(const Tensor& t) const {
  return t.view({t.size(0), t.size(1), n_head, n_embd / n_head}).transpose(1, 2);
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = n_embd;
  Tensor qkv = (*c_attn)(x);
  Tensor q = heads(qkv.slice(2, 0, C)), k = heads(qkv.slice(2, C, 2 * C)), v = heads(qkv.slice(2, 2 * C, 3 * C));
  Tensor y = tritium::scaled_dot_product_attention(q, k, v, /*is_causal=*/true);
  y = y.transpose(1, 2).reshape({B, T, C});
  return (*resid_dropout)((*c_proj)(y));
}

Tensor CausalSelfAttention::forward_cached(const Tensor& x, KVCache& cache, size_t layer) {
  const int64_t B = x.size(0), T = x.size(1), C = n_embd, start = cache.length;
  if (start > 0 && T != 1)
    fail("CausalSelfAttention::forward_cached: {} new positions after {} cached ones (one at a time, or a whole "
         "prompt into an empty cache)", T, start);
  Tensor qkv = (*c_attn)(x);
  Tensor q = heads(qkv.slice(2, 0, C)), k = heads(qkv.slice(2, C, 2 * C)), v = heads(qkv.slice(2, 2 * C, 3 * C));
  Tensor keys = cache.keys.at(layer).slice(2, 0, start + T), values = cache.values.at(layer).slice(2, 0, start + T);
  Tensor k_new = keys.slice(2, start, start + T), v_new = values.slice(2, start, start + T);
  k_new.copy_(k);
  v_new.copy_(v);
  // A prompt into an empty cache is the causal case; one new query sees every cached key.
  Tensor y = tritium::scaled_dot_product_attention(q, keys, values, /*is_causal=*/start == 0 && T > 1);
  y = y.transpose(1, 2).reshape({B, T, C});
  return (*c_proj)(y);
}

// ---- MLP and block ---------------------------------------------------------------------------------

GPTMLP::GPTMLP(const GPTConfig& cfg, Generator& gen) {
  c_fc = register_module("c_fc", std::make_shared<Linear>(cfg.n_embd, 4 * cfg.n_embd, cfg.bias, gen));
  register_module("gelu", std::make_shared<GELU>());
  c_proj = register_module("c_proj", std::make_shared<Linear>(4 * cfg.n_embd, cfg.n_embd, cfg.bias, gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(cfg.dropout));
}

Tensor GPTMLP::forward(const Tensor& x) { return (*dropout)((*c_proj)(tritium::gelu((*c_fc)(x)))); }

GPTBlock::GPTBlock(const GPTConfig& cfg, Generator& gen) {
  ln_1 = register_module("ln_1", std::make_shared<GPTLayerNorm>(cfg.n_embd, cfg.bias));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(cfg, gen));
  ln_2 = register_module("ln_2", std::make_shared<GPTLayerNorm>(cfg.n_embd, cfg.bias));
  mlp = register_module("mlp", std::make_shared<GPTMLP>(cfg, gen));
}

Tensor GPTBlock::forward(const Tensor& x) {
  Tensor h = x + (*attn)((*ln_1)(x));
  return h + (*mlp)((*ln_2)(h));
}

Tensor GPTBlock::forward_cached(const Tensor& x, KVCache& cache, size_t layer) {
  Tensor h = x + attn->forward_cached((*ln_1)(x), cache, layer);
  return h + (*mlp)((*ln_2)(h));
}

// ---- the model -------------------------------------------------------------------------------------

GPT::GPT(GPTConfig cfg, Generator& gen) : cfg_(cfg) {
  cfg_.validate();
  transformer = register_module("transformer", std::make_shared<ModuleDict>());
  wte = std::make_shared<Embedding>(cfg_.vocab_size, cfg_.n_embd, std::nullopt, gen);
  wpe = std::make_shared<Embedding>(cfg_.block_size, cfg_.n_embd, std::nullopt, gen);
  drop = std::make_shared<Dropout>(cfg_.dropout);
  h = std::make_shared<ModuleList>();
  for (int64_t i = 0; i < cfg_.n_layer; ++i) {
    blocks.push_back(std::make_shared<GPTBlock>(cfg_, gen));
    h->push_back(blocks.back());
  }
  ln_f = std::make_shared<GPTLayerNorm>(cfg_.n_embd, cfg_.bias);
  transformer->insert("wte", wte);
  transformer->insert("wpe", wpe);
  transformer->insert("drop", drop);
  transformer->insert("h", h);
  transformer->insert("ln_f", ln_f);

  // nanoGPT's _init_weights, then the scaled residual projections (GPT-2's 1/sqrt(2 n_layer)).
  NoGradGuard no_grad;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(cfg_.n_layer));
  for (auto& [name, p] : named_parameters()) {
    bool is_bias = name.ends_with(".bias");
    bool is_norm = name.find(".ln_") != std::string::npos;
    if (is_norm) continue;  // LayerNorms keep ones and zeros
    if (is_bias) {
      init::zeros_(p);
    } else {
      bool residual = name.ends_with("c_proj.weight");
      init::normal_(p, 0.0, residual ? residual_std : 0.02, gen);
    }
  }
}

int64_t GPT::num_parameters_without_positions() const { return num_parameters() - wpe->weight.numel(); }

void GPT::check_tokens(const Tensor& tokens, const char* what, int64_t start) const {
  if (!tokens.defined()) fail("GPT::{}: the tokens are undefined", what);
  if (tokens.dim() != 2) fail("GPT::{}: tokens must be [batch, length], got {}", what, tokens.str());
  if (!is_int(tokens.dtype())) fail("GPT::{}: tokens must be integers, got {}", what, dtype_name(tokens.dtype()));
  if (tokens.size(1) < 1) fail("GPT::{}: the sequence is empty", what);
  if (start + tokens.size(1) > cfg_.block_size)
    fail("GPT::{}: {} positions{} exceed the context block_size = {}", what, tokens.size(1),
         start ? fmt::format(" after {} cached ones", start) : std::string(), cfg_.block_size);
}

Tensor GPT::embed(const Tensor& tokens, int64_t start) {
  const int64_t T = tokens.size(1);
  Tensor pos = ops::arange(start, start + T, 1, DType::i64, wte->weight.device());
  return (*drop)((*wte)(tokens) + (*wpe)(pos));
}

Tensor GPT::head(const Tensor& x) {
  Tensor y = (*ln_f)(x);
  const int64_t B = y.size(0), T = y.size(1);
  return tritium::matmul(y.reshape({B * T, cfg_.n_embd}), wte->weight.t()).view({B, T, cfg_.vocab_size});
}

Tensor GPT::forward(const Tensor& tokens) {
  check_tokens(tokens, "forward", 0);
  Tensor x = embed(tokens, 0);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const bool recompute = cfg_.gradient_checkpointing &&
                           (cfg_.checkpoint_blocks < 0 || static_cast<int64_t>(i) < cfg_.checkpoint_blocks);
    x = recompute ? nn::checkpoint(*blocks[i], x) : (*blocks[i])(x);
  }
  return head(x);
}

Tensor GPT::loss(const Tensor& tokens, const Tensor& targets) {
  Tensor logits = forward(tokens);
  if (!targets.defined() || targets.shape() != tokens.shape())
    fail("GPT::loss: targets {} must have the tokens' shape {}", targets.defined() ? targets.str() : "undefined",
         tokens.str());
  const int64_t N = tokens.size(0) * tokens.size(1);
  return tritium::cross_entropy(logits.view({N, cfg_.vocab_size}), targets.reshape({N}));
}

KVCache GPT::make_cache(int64_t batch) const {
  if (batch < 1) fail("GPT::make_cache: batch must be at least 1, got {}", batch);
  KVCache cache;
  cache.batch = batch;
  const int64_t hd = cfg_.n_embd / cfg_.n_head;
  for (int64_t i = 0; i < cfg_.n_layer; ++i) {
    cache.keys.push_back(
        Tensor::empty({batch, cfg_.n_head, cfg_.block_size, hd}, wte->weight.dtype(), wte->weight.device()));
    cache.values.push_back(
        Tensor::empty({batch, cfg_.n_head, cfg_.block_size, hd}, wte->weight.dtype(), wte->weight.device()));
  }
  return cache;
}

Tensor GPT::forward_cached(const Tensor& tokens, KVCache& cache, bool last_only) {
  check_tokens(tokens, "forward_cached", cache.length);
  if (tokens.size(0) != cache.batch)
    fail("GPT::forward_cached: tokens {} for a cache of batch {}", tokens.str(), cache.batch);
  if (static_cast<int64_t>(cache.keys.size()) != cfg_.n_layer)
    fail("GPT::forward_cached: the cache has {} layers, the model {} (make it with make_cache)", cache.keys.size(),
         cfg_.n_layer);
  NoGradGuard no_grad;
  const int64_t T = tokens.size(1);
  if (cache.length > 0 && T > 1) {  // one position at a time after the prompt
    Tensor last;
    std::vector<Tensor> all;
    for (int64_t t = 0; t < T; ++t) {
      last = forward_cached(tokens.slice(1, t, t + 1), cache, true);
      if (!last_only) all.push_back(last);
    }
    return last_only ? last : tritium::cat(all, 1);
  }
  Tensor x = embed(tokens, cache.length);
  for (size_t l = 0; l < blocks.size(); ++l) x = blocks[l]->forward_cached(x, cache, l);
  cache.length += T;
  return head(last_only ? x.slice(1, T - 1, T) : x);
}

// ---- sampling --------------------------------------------------------------------------------------

void check_generation_config(const GenerationConfig& cfg, int64_t vocab_size) {
  if (cfg.max_new_tokens < 0) fail("generate: max_new_tokens must be >= 0, got {}", cfg.max_new_tokens);
  if (!cfg.greedy && !(cfg.temperature > 0.0 && std::isfinite(cfg.temperature)))
    fail("generate: temperature must be a finite number above 0 when sampling (greedy = true picks the argmax), "
         "got {}", cfg.temperature);
  if (cfg.top_k < 0 || cfg.top_k > vocab_size)
    fail("generate: top_k must be in [0, {}] (0 keeps every token), got {}", vocab_size, cfg.top_k);
  if (!(cfg.top_p > 0.0 && cfg.top_p <= 1.0)) fail("generate: top_p must be in (0, 1], got {}", cfg.top_p);
}

Tensor filter_logits(const Tensor& logits, int64_t top_k, double top_p) {
  if (!logits.defined() || logits.dim() != 2) fail("filter_logits: logits must be [batch, vocab]");
  const int64_t V = logits.size(1);
  if (top_k < 0 || top_k > V) fail("filter_logits: top_k must be in [0, {}], got {}", V, top_k);
  if (!(top_p > 0.0 && top_p <= 1.0)) fail("filter_logits: top_p must be in (0, 1], got {}", top_p);
  const double inf = std::numeric_limits<double>::infinity();
  Tensor out = logits;
  if (top_k > 0 && top_k < V) {
    // Below the k-th largest value goes (ties with it stay, as nanoGPT's `logits < v[:, [-1]]`).
    Tensor kth = ops::topk(out, top_k, 1).values.slice(1, top_k - 1, top_k);
    out = ops::masked_fill(out, ops::lt(out, kth), -inf);
  }
  if (top_p < 1.0) {
    // Sorted descending, a token goes when the mass before it already reaches top_p: the most
    // likely one always stays.
    ops::ValuesIndices sorted = ops::sort(out, 1, /*descending=*/true);
    Tensor probs = ops::softmax(sorted.values, 1);
    Tensor before = ops::sub(ops::cumsum(probs, 1), probs);
    Tensor drop_sorted = ops::gt(before, Scalar(top_p));
    Tensor drop = ops::scatter(ops::zeros_like(drop_sorted), 1, sorted.indices, drop_sorted);
    out = ops::masked_fill(out, drop, -inf);
  }
  return out;
}

Tensor sample_next_token(const Tensor& logits, const GenerationConfig& cfg, Generator& gen) {
  if (!logits.defined() || logits.dim() != 2) fail("sample_next_token: logits must be [batch, vocab]");
  check_generation_config(cfg, logits.size(1));
  if (cfg.greedy) return ops::argmax(logits, 1);
  Tensor scaled = ops::div(ops::to_dtype(logits, DType::f32), Scalar(cfg.temperature));
  Tensor probs = ops::softmax(filter_logits(scaled, cfg.top_k, cfg.top_p), 1);
  return ops::multinomial(probs, 1, false, gen).view({logits.size(0)});
}

// ---- generation ------------------------------------------------------------------------------------

Tensor GPT::generate(const Tensor& prompt_in, const GenerationConfig& gen_cfg, std::vector<Tensor>* step_logits) {
  if (!prompt_in.defined() || (prompt_in.dim() != 1 && prompt_in.dim() != 2))
    fail("GPT::generate: the prompt must be [length] or [batch, length] token ids");
  const bool one_dim = prompt_in.dim() == 1;
  Tensor prompt = one_dim ? prompt_in.unsqueeze(0) : prompt_in;
  if (prompt.size(1) < 1) fail("GPT::generate: the prompt is empty (give at least one token)");
  if (!is_int(prompt.dtype()) || prompt.dtype() == DType::i1)
    fail("GPT::generate: prompt tokens must be integers, got {}", dtype_name(prompt.dtype()));
  if (prompt.size(1) > cfg_.block_size)
    fail("GPT::generate: the prompt has {} tokens, longer than the context block_size = {}", prompt.size(1),
         cfg_.block_size);
  check_generation_config(gen_cfg, cfg_.vocab_size);
  NoGradGuard no_grad;
  prompt = ops::to_dtype(prompt, DType::i64);
  if (prompt.device() != wte->weight.device()) prompt = prompt.to(wte->weight.device());
  {
    auto ids = prompt.to_vector<int64_t>();
    for (int64_t id : ids)
      if (id < 0 || id >= cfg_.vocab_size)
        fail("GPT::generate: prompt token {} is outside [0, vocab_size = {})", id, cfg_.vocab_size);
  }
  const bool was_training = is_training();
  eval();
  Generator gen(gen_cfg.seed);
  const int64_t B = prompt.size(0);
  Tensor seq = prompt;
  KVCache cache = make_cache(B);
  for (int64_t step = 0; step < gen_cfg.max_new_tokens; ++step) {
    const int64_t L = seq.size(1);
    Tensor logits;
    if (!gen_cfg.use_cache || L > cfg_.block_size) {
      // No cache, or a window that moved: the last block_size tokens from position 0 again.
      Tensor window = seq.slice(1, std::max<int64_t>(0, L - cfg_.block_size), L);
      if (gen_cfg.use_cache) {
        cache.length = 0;
        logits = forward_cached(window, cache, true);
      } else {
        logits = forward(window).slice(1, window.size(1) - 1, window.size(1));
      }
    } else if (cache.length == 0) {
      logits = forward_cached(seq, cache, true);
    } else {
      logits = forward_cached(seq.slice(1, L - 1, L), cache, true);
    }
    logits = logits.reshape({B, cfg_.vocab_size});
    if (step_logits) step_logits->push_back(logits.clone());
    Tensor next = sample_next_token(logits, gen_cfg, gen).view({B, 1});
    seq = tritium::cat({seq, next}, 1);
  }
  train(was_training);
  return one_dim ? seq.view({seq.size(1)}) : seq;
}

Tensor GPT::generate(const std::vector<int64_t>& prompt, const GenerationConfig& gen_cfg) {
  return generate(Tensor::from_vector(prompt, {static_cast<int64_t>(prompt.size())}, wte->weight.device()), gen_cfg);
}

}  // namespace tritium::nn
