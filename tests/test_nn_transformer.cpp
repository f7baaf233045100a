// MultiheadAttention and the Transformer layers (nn/transformer.h) against PyTorch: every case of
// tests/fixtures/torch_transformer/ (scripts/make_torch_transformer_fixtures.py) holds a torch.nn
// module's state_dict, its inputs and masks, its outputs in eval mode and the gradients of
// sum(out * R) for the inputs and every parameter. Plus the fused and explicit attention paths
// agreeing, dropout, reprs, and each bad input a clear error.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "io/json.h"
#include "io/safetensors.h"
#include "nn/transformer.h"
#include "fixtures_dir.h"
#include "test_support.h"

namespace tt = tritium::test;
using namespace tritium;
using runtime::Tensor;

namespace {

std::vector<double> values(const Tensor& t) { return t.detach().to(DType::f64).to(Device::cpu()).to_vector<double>(); }

void check_tensor(const Tensor& got, const Tensor& expected, double tol, const std::string& what) {
  BOOST_TEST_REQUIRE(got.defined(), what << ": undefined");
  BOOST_TEST_REQUIRE((got.shape() == expected.shape()), what << ": shape " << got.str() << " vs " << expected.str());
  auto g = values(got);
  tt::host_vector<double> out(g.begin(), g.end());
  tt::check_close<double>(out, values(expected), tol, what);
}

struct Case {
  io::Safetensors file;
  io::Json config;
  Tensor in(const std::string& name) const {
    auto it = file.tensors.find("in." + name);
    if (it == file.tensors.end()) return {};
    // bool masks travel as uint8
    return it->second.dtype() == DType::u8 ? it->second.to(DType::i1) : it->second;
  }
  bool has(const std::string& key) const { return file.tensors.contains(key); }
  const Tensor& at(const std::string& key) const { return file.tensors.at(key); }
};

Case load_case(const std::string& name, Device device) {
  Case c{io::load_safetensors((tt::fixtures_dir() / "torch_transformer" / (name + ".safetensors")).string(), device), {}};
  c.config = io::parse_json(c.file.metadata.at("config"), "config");
  return c;
}

nn::TransformerLayerOptions layer_options(const io::Json& ctor) {
  nn::TransformerLayerOptions o;
  o.d_model = ctor.at("d_model", "d_model").as_int64("d_model");
  o.nhead = ctor.at("nhead", "nhead").as_int64("nhead");
  if (auto* v = ctor.find("dim_feedforward")) o.dim_feedforward = v->as_int64("dim_feedforward");
  if (auto* v = ctor.find("dropout")) o.dropout = v->as_double("dropout");
  if (auto* v = ctor.find("activation"))
    o.activation = v->as_string("activation") == "gelu" ? nn::TransformerActivation::gelu : nn::TransformerActivation::relu;
  if (auto* v = ctor.find("batch_first")) o.batch_first = v->as_bool("batch_first");
  if (auto* v = ctor.find("norm_first")) o.norm_first = v->as_bool("norm_first");
  if (auto* v = ctor.find("bias")) o.bias = v->as_bool("bias");
  return o;
}

bool flag(const io::Json& forward, const char* key, bool otherwise) {
  auto* v = forward.find(key);
  return v ? v->as_bool(key) : otherwise;
}

// Loads param.* into the module, checks the keys' names and order against PyTorch's.
void load_params(nn::Module& m, const Case& c) {
  std::vector<std::string> torch_keys;
  io::Json keys = io::parse_json(c.file.metadata.at("keys"), "keys");
  for (const io::Json& k : keys.as_array("keys"))
    torch_keys.push_back(k.as_string("key"));
  BOOST_TEST(m.state_dict().keys() == torch_keys, boost::test_tools::per_element());
  nn::StateDict dict;
  for (const auto& key : torch_keys) dict.insert(key, c.at("param." + key));
  m.load_state_dict(dict);
  m.eval();
}

Tensor leaf(const Tensor& t) {
  Tensor x = t.detach().clone();
  x.requires_grad_(true);
  return x;
}

void check_grads(const nn::Module& m, const Case& c, double tol) {
  for (const auto& [name, p] : m.named_parameters())
    check_tensor(p.grad(), c.at("grad." + name), tol, "grad " + name);
}

constexpr double kTol = 2e-4;

void run_mha_case(const std::string& name, const tt::Backend& be) {
  Case c = load_case(name, be.device);
  const io::Json& ctor = c.config.at("ctor", "ctor");
  const io::Json& fwd = c.config.at("forward", "forward");
  auto opt_int = [&](const char* k, int64_t d) { auto* v = ctor.find(k); return v ? v->as_int64(k) : d; };
  auto opt_bool = [&](const char* k, bool d) { auto* v = ctor.find(k); return v ? v->as_bool(k) : d; };
  Generator gen(3);
  nn::MultiheadAttention mha(ctor.at("embed_dim", "e").as_int64("e"), ctor.at("num_heads", "h").as_int64("h"), 0.0,
                             opt_bool("bias", true), opt_int("kdim", 0), opt_int("vdim", 0),
                             opt_bool("batch_first", false), gen);
  load_params(mha, c);
  const bool self = c.config.at("self", "self").as_bool("self");
  Tensor q = leaf(c.in("query")), k = self ? q : leaf(c.in("key")), v = self ? q : leaf(c.in("value"));
  const bool need_weights = flag(fwd, "need_weights", true);
  auto [out, weights] = mha.forward(q, k, v, c.in("key_padding_mask"), need_weights, c.in("attn_mask"),
                                    flag(fwd, "average_attn_weights", true), flag(fwd, "is_causal", false));
  check_tensor(out, c.at("out"), kTol, name + " output");
  BOOST_TEST(weights.defined() == c.has("weights"));
  if (c.has("weights")) check_tensor(weights, c.at("weights"), kTol, name + " weights");
  tritium::sum(out * c.at("seed.grad")).backward();
  check_tensor(q.grad(), c.at("grad.in.query"), kTol, name + " grad query");
  if (!self) {
    check_tensor(k.grad(), c.at("grad.in.key"), kTol, name + " grad key");
    check_tensor(v.grad(), c.at("grad.in.value"), kTol, name + " grad value");
  }
  check_grads(mha, c, kTol);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_transformer)

BOOST_AUTO_TEST_CASE(multihead_attention_matches_pytorch) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (std::string name : {"mha_self", "mha_cross_masks", "mha_kvdim_float_mask", "mha_causal", "mha_unbatched"})
      BOOST_TEST_CONTEXT(name) { run_mha_case(name, be); }
  });
}

BOOST_AUTO_TEST_CASE(encoder_and_decoder_layers_match_pytorch) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (std::string name : {"encoder_post_relu", "encoder_pre_gelu_causal", "decoder_post", "decoder_pre_bf",
                             "encoder_stack", "decoder_stack"}) {
      BOOST_TEST_CONTEXT(name) {
        Case c = load_case(name, be.device);
        const std::string kind = c.config.at("module", "module").as_string("module");
        const io::Json& ctor = c.config.at("ctor", "ctor");
        const io::Json& fwd = c.config.at("forward", "forward");
        nn::TransformerLayerOptions o = layer_options(ctor);
        Generator gen(5);
        std::shared_ptr<nn::Module> m;
        Tensor out;
        std::vector<std::pair<std::string, Tensor>> inputs;
        if (kind == "TransformerEncoderLayer" || kind == "TransformerEncoder") {
          Tensor src = leaf(c.in("src"));
          inputs = {{"src", src}};
          if (kind == "TransformerEncoderLayer") {
            auto layer = std::make_shared<nn::TransformerEncoderLayer>(o, gen);
            load_params(*layer, c);
            out = layer->forward(src, c.in("src_mask"), c.in("src_key_padding_mask"), flag(fwd, "is_causal", false));
            m = layer;
          } else {
            auto stack = std::make_shared<nn::TransformerEncoder>(
                [&] { return std::make_shared<nn::TransformerEncoderLayer>(o, gen); },
                ctor.at("num_layers", "n").as_int64("n"),
                std::make_shared<nn::LayerNorm>(std::vector<int64_t>{o.d_model}));
            load_params(*stack, c);
            out = stack->forward(src, c.in("mask"), c.in("src_key_padding_mask"), flag(fwd, "is_causal", false));
            m = stack;
          }
        } else {
          Tensor tgt = leaf(c.in("tgt")), memory = leaf(c.in("memory"));
          inputs = {{"tgt", tgt}, {"memory", memory}};
          if (kind == "TransformerDecoderLayer") {
            auto layer = std::make_shared<nn::TransformerDecoderLayer>(o, gen);
            load_params(*layer, c);
            out = layer->forward(tgt, memory, c.in("tgt_mask"), c.in("memory_mask"), c.in("tgt_key_padding_mask"),
                                 c.in("memory_key_padding_mask"), flag(fwd, "tgt_is_causal", false));
            m = layer;
          } else {
            auto stack = std::make_shared<nn::TransformerDecoder>(
                [&] { return std::make_shared<nn::TransformerDecoderLayer>(o, gen); },
                ctor.at("num_layers", "n").as_int64("n"),
                std::make_shared<nn::LayerNorm>(std::vector<int64_t>{o.d_model}));
            load_params(*stack, c);
            out = stack->forward(tgt, memory, c.in("tgt_mask"), c.in("memory_mask"));
            m = stack;
          }
        }
        check_tensor(out, c.at("out"), kTol, name + " output");
        tritium::sum(out * c.at("seed.grad")).backward();
        for (auto& [input_name, t] : inputs)
          check_tensor(t.grad(), c.at("grad.in." + input_name), kTol, name + " grad " + input_name);
        check_grads(*m, c, kTol);
      }
    }
  });
}

// The fused kernel (no weights, no mask) and the explicit softmax path compute the same attention.
BOOST_AUTO_TEST_CASE(fused_and_explicit_paths_agree) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);
    Generator gen(11);
    nn::MultiheadAttention mha(12, 3, 0.0, true, 0, 0, /*batch_first=*/true, gen);
    Tensor x = ops::randn({2, 9, 12}, gen, DType::f32, be.device);
    for (bool causal : {false, true}) {
      BOOST_TEST_CONTEXT("causal " << causal) {
        Tensor mask = causal ? nn::causal_mask(9, be.device) : Tensor();
        Tensor fused = mha.forward(x, x, x, {}, /*need_weights=*/false, mask, true, causal).first;
        auto [explicit_out, w] = mha.forward(x, x, x, {}, /*need_weights=*/true, mask);
        check_tensor(fused, explicit_out, 1e-4, "fused vs explicit");
        // The weights are a distribution over the keys, zero above the diagonal when causal.
        auto wv = values(w);
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t i = 0; i < 9; ++i) {
            double total = 0;
            for (int64_t j = 0; j < 9; ++j) {
              double p = wv[(b * 9 + i) * 9 + j];
              total += p;
              if (causal && j > i) BOOST_TEST(p == 0.0);
            }
            BOOST_TEST(std::abs(total - 1.0) < 1e-5);
          }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(dropout_applies_in_training_only) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);
    Generator gen(12);
    nn::TransformerLayerOptions o;
    o.d_model = 8, o.nhead = 2, o.dim_feedforward = 16, o.dropout = 0.5;
    nn::TransformerEncoderLayer layer(o, gen);
    Tensor x = ops::randn({5, 3, 8}, gen, DType::f32, be.device);
    layer.eval();
    auto a = values(layer(x)), b = values(layer(x));
    BOOST_TEST(a == b, boost::test_tools::per_element());
    layer.train();
    auto c = values(layer(x));
    BOOST_TEST((a != c));
  });
}

BOOST_AUTO_TEST_CASE(reprs_and_keys_match_pytorch) {
  tt::for_each_backend([&](const tt::Backend& be) {
  DefaultDeviceGuard on(be.device);
  nn::TransformerLayerOptions o;
  o.d_model = 8, o.nhead = 2, o.dim_feedforward = 16;
  nn::TransformerEncoderLayer layer(o);
  BOOST_TEST(layer.str() ==
             "TransformerEncoderLayer(\n"
             "  (self_attn): MultiheadAttention(\n"
             "    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
             "  )\n"
             "  (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
             "  (dropout): Dropout(p=0.1, inplace=False)\n"
             "  (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
             "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
             "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
             "  (dropout1): Dropout(p=0.1, inplace=False)\n"
             "  (dropout2): Dropout(p=0.1, inplace=False)\n"
             ")");
  // PyTorch's init: xavier_uniform_ projections (bound sqrt(6 / (E + 3E))), zero biases.
  nn::MultiheadAttention mha(16, 4);
  auto w = values(mha.in_proj_weight);
  double bound = std::sqrt(6.0 / (16 + 48)), largest = 0;
  for (double x : w) largest = std::max(largest, std::abs(x));
  BOOST_TEST(largest <= bound);
  BOOST_TEST(largest > 0.9 * bound);
  for (double x : values(mha.in_proj_bias)) BOOST_TEST(x == 0.0);
  for (double x : values(mha.out_proj->bias)) BOOST_TEST(x == 0.0);
  auto causal = values(nn::causal_mask(3, be.device));
  BOOST_TEST((causal == std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  });
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_clear_errors) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);
    Generator gen(13);
    auto throws = [](auto&& f, const std::string& words) {
      try {
        f();
        BOOST_ERROR("no error; expected one mentioning: " << words);
      } catch (const Error& e) {
        BOOST_TEST(std::string(e.what()).find(words) != std::string::npos, e.what());
      }
    };
    throws([&] { nn::MultiheadAttention(10, 3); }, "divisible by num_heads");
    nn::MultiheadAttention mha(8, 2, 0.0, true, 0, 0, false, gen);
    Tensor q = ops::randn({4, 2, 8}, gen, DType::f32, be.device), kv = ops::randn({6, 2, 8}, gen, DType::f32, be.device);
    throws([&] { mha.forward(q, kv, kv, {}, true, ops::zeros({4, 5}, DType::i1, be.device)); },
           "The shape of the 2D attn_mask is [4, 5], but should be (4, 6).");
    throws([&] { mha.forward(q, kv, kv, ops::zeros({2, 4}, DType::i1, be.device)); }, "key_padding_mask shape of (2, 6)");
    throws([&] { mha.forward(q, kv, ops::randn({5, 2, 8}, gen, DType::f32, be.device)); }, "does not match value shape");
    throws([&] { mha.forward(q, q, q, {}, false, {}, true, /*is_causal=*/true); }, "Need attn_mask");
    throws([&] { mha.forward(q, kv, kv, {}, true, ops::zeros({4, 6}, DType::i32, be.device)); },
           "only bool and floating types of attn_mask");
    throws([&] { mha.forward(ops::randn({4, 2, 7}, gen, DType::f32, be.device), kv, kv); },
           "expecting embedding dimension of 8, but got 7");
    throws([&] { mha.forward(ops::randn({2, 4, 2, 8}, gen, DType::f32, be.device), kv, kv); }, "received 4-D query");
    nn::TransformerLayerOptions o;
    o.d_model = 8, o.nhead = 2, o.dim_feedforward = 16;
    nn::TransformerDecoderLayer dec(o, gen);
    throws([&] { dec.forward(q, Tensor()); }, "memory");
    throws([&] { nn::TransformerEncoder([&] { return std::make_shared<nn::TransformerEncoderLayer>(o, gen); }, 0); },
           "num_layers must be positive");
  });
}

BOOST_AUTO_TEST_SUITE_END()
