// PyTorch parity: every case of every fixture file in tests/fixtures/torch/ (written by
// scripts/make_torch_fixtures.py from PyTorch) runs through the op registry (nn::call with the
// op's name and attributes) on every backend, with the inputs rebuilt in their recorded layout
// (as_strided over the stored storage), and its outputs and input gradients (for the recorded
// grad_output) are compared with PyTorch's: per-dtype tolerances (torch.testing's defaults),
// exact for integers and bool, NaN only where PyTorch has NaN, infinities equal. A case where
// PyTorch raises must raise a tritium::Error. A fixture naming an op the registry does not know
// is an error, so fixtures cannot silently rot, and so is a registry op without fixtures (unless
// listed with its reason in ops_without_fixtures()). docs/ops.md, "PyTorch parity fixtures".
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "fixtures_dir.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "nn/autograd.h"
#include "nn/dispatch.h"
#include "runtime/device_checks.h"
#include "runtime/streams.h"
#include "nn/matmul_family.h"
#include "ops/conv.h"
#include "ops/decl/op_decl.h"
#include "ops/ops.h"
#include "ops/sort.h"

namespace tt = tritium::test;
namespace io = tritium::io;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

namespace {

// ---- tolerances -------------------------------------------------------------------------------------

struct Tolerance {
  double rtol = 0, atol = 0;  // |ours - torch| <= atol + rtol * |torch|; 0, 0: exact
};

// torch.testing.assert_close's defaults per dtype; integers and bool exact.
Tolerance default_tolerance(DType d) {
  switch (d) {
    case DType::f16: return {1e-3, 1e-5};
    case DType::bf16: return {1.6e-2, 1e-5};
    case DType::f32: return {1.3e-6, 1e-5};
    case DType::f64: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}

// ---- comparing one tensor -------------------------------------------------------------------------

std::vector<double> as_f64(const Tensor& t) {
  if (t.numel() == 0) return {};
  return ops::to_dtype(t, DType::f64).to_vector<double>();
}
std::vector<int64_t> as_i64(const Tensor& t) {
  if (t.numel() == 0) return {};
  return ops::to_dtype(t, DType::i64).to_vector<int64_t>();
}

// Empty when `ours` matches `torch`; otherwise what differs, with the largest difference. With a
// float64 `reference` (f16/bf16 cases: the same call on the inputs in float64), an element off
// PyTorch's is still right when it is at least as close to the reference as PyTorch's: PyTorch's
// own low-precision kernels round intermediates that Tritium keeps in f32 (layer_norm's f16
// backward is 13 ulps off the float64 answer where Tritium's is within one).
std::optional<std::string> compare(const Tensor& ours, const Tensor& torch, const Tensor& reference,
                                   std::optional<Tolerance> tol_override, const char* what) {
  if (!ours.defined()) return fmt::format("{}: Tritium gave no tensor", what);
  if (ours.dtype() != torch.dtype())
    return fmt::format("{}: dtype {} where PyTorch gives {}", what, tritium::dtype_name(ours.dtype()),
                       tritium::dtype_name(torch.dtype()));
  if (ours.shape() != torch.shape())
    return fmt::format("{}: shape [{}] where PyTorch gives [{}]", what, fmt::join(ours.shape(), ", "),
                       fmt::join(torch.shape(), ", "));
  if (!tritium::is_float(torch.dtype())) {
    std::vector<int64_t> a = as_i64(ours), b = as_i64(torch);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i] && bad++ == 0) first = i;
    if (bad == 0) return std::nullopt;
    return fmt::format("{}: {} of {} elements differ (exact dtype {}); first at flat index {}: {} vs PyTorch {}", what,
                       bad, a.size(), tritium::dtype_name(torch.dtype()), first, a[first], b[first]);
  }
  Tolerance tol = tol_override.value_or(default_tolerance(torch.dtype()));
  std::vector<double> a = as_f64(ours), b = as_f64(torch);
  std::vector<double> r = reference.defined() && reference.shape() == torch.shape() ? as_f64(reference)
                                                                                    : std::vector<double>();
  size_t bad = 0, worst = 0, nearer_reference = 0;
  double worst_excess = -1, worst_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff;
    bool ok;
    if (std::isnan(b[i]) || std::isnan(a[i])) {
      ok = std::isnan(a[i]) && std::isnan(b[i]);
      diff = ok ? 0 : INFINITY;
    } else if (std::isinf(b[i]) || std::isinf(a[i])) {
      ok = a[i] == b[i];
      diff = ok ? 0 : INFINITY;
    } else {
      diff = std::fabs(a[i] - b[i]);
      ok = diff <= tol.atol + tol.rtol * std::fabs(b[i]);
      if (!ok && !r.empty() && std::isfinite(r[i]) && std::fabs(a[i] - r[i]) <= std::fabs(b[i] - r[i])) {
        ok = true;
        ++nearer_reference;
      }
    }
    double excess = ok ? 0 : (std::isinf(diff) ? INFINITY : diff / (tol.atol + tol.rtol * std::fabs(b[i])));
    if (!ok) ++bad;
    if (excess > worst_excess || (excess == worst_excess && diff > worst_diff)) {
      worst_excess = excess;
      worst_diff = diff;
      worst = i;
    }
  }
  if (nearer_reference > 0)
    BOOST_TEST_MESSAGE(what << ": " << nearer_reference << " elements off PyTorch's but nearer the float64 reference");
  if (bad == 0) return std::nullopt;
  return fmt::format("{}: {} of {} elements off (rtol {:g}, atol {:g}); largest difference {:g} at flat index {}: "
                     "{:.9g} vs PyTorch {:.9g}{}",
                     what, bad, a.size(), tol.rtol, tol.atol, worst_diff, worst, a[worst], b[worst],
                     r.empty() ? std::string() : fmt::format(" (float64 reference {:.9g})", r[worst]));
}

// ---- reading a case ---------------------------------------------------------------------------------

double json_double(const io::Json& v, std::string_view what) {
  if (v.is_string()) {  // "nan", "inf", "-inf": JSON has no literals for them
    const std::string& s = v.as_string(what);
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    tritium::fail("{}: expected a number or nan/inf/-inf, got \"{}\"", what, s);
  }
  return v.as_double(what);
}

// The attribute values a case's tensors and generators own while it runs.
struct CaseResources {
  std::vector<std::unique_ptr<ops::Generator>> generators;
};

ops::Attrs read_attrs(const io::Json& attrs, const io::TensorMap& tensors, CaseResources& res) {
  ops::Attrs out;
  for (const auto& [name, typed] : attrs.as_object("attrs")) {
    const auto& kv = typed.as_object("attribute " + name);
    if (kv.size() != 1) tritium::fail("attribute {}: expected one {{type: value}} pair", name);
    const std::string& tag = kv[0].first;
    const io::Json& v = kv[0].second;
    std::string what = "attribute " + name;
    if (tag == "int") out.set(name, static_cast<int>(v.as_int64(what)));
    else if (tag == "int64") out.set(name, v.as_int64(what));
    else if (tag == "double") out.set(name, json_double(v, what));
    else if (tag == "bool") out.set(name, v.as_bool(what));
    else if (tag == "string") out.set(name, v.as_string(what));
    else if (tag == "optional_double")
      out.set(name, v.is_null() ? std::optional<double>() : std::optional<double>(json_double(v, what)));
    else if (tag == "scalar_int") out.set(name, ops::Scalar(v.as_int64(what)));
    else if (tag == "scalar_float") out.set(name, ops::Scalar(json_double(v, what)));
    else if (tag == "scalar_bool") out.set(name, ops::Scalar(v.as_bool(what)));
    else if (tag == "dims" || tag == "shape") {
      std::vector<int> dims;
      ops::Shape shape;
      for (const io::Json& e : v.as_array(what)) {
        dims.push_back(static_cast<int>(e.as_int64(what)));
        shape.push_back(e.as_int64(what));
      }
      if (tag == "dims") out.set(name, dims);
      else out.set(name, shape);
    } else if (tag == "generator") {
      res.generators.push_back(std::make_unique<ops::Generator>(static_cast<uint64_t>(v.as_int64(what))));
      out.set(name, res.generators.back().get());
    } else if (tag == "tensors") {
      std::vector<Tensor> list;
      for (const io::Json& e : v.as_array(what)) list.push_back(e.is_null() ? Tensor() : tensors.at(e.as_string(what)));
      out.set(name, list);
    } else {
      tritium::fail("attribute {}: unknown type tag \"{}\"", name, tag);
    }
  }
  return out;
}

const Tensor& stored(const io::TensorMap& tensors, const std::string& name) {
  auto it = tensors.find(name);
  if (it == tensors.end()) tritium::fail("the fixture names tensor \"{}\", which the file lacks", name);
  return it->second;
}

Tensor read_input(const io::Json& in, const io::TensorMap& tensors) {
  if (in.is_null()) return Tensor();
  Tensor t = stored(tensors, in.at("tensor", "input").as_string("input tensor"));
  const io::Json& layout = in.at("layout", "input");
  if (layout.is_null()) return t;
  ops::Shape shape, strides;
  for (const io::Json& e : layout.at("shape", "layout").as_array("layout shape")) shape.push_back(e.as_int64("shape"));
  for (const io::Json& e : layout.at("strides", "layout").as_array("layout strides"))
    strides.push_back(e.as_int64("strides"));
  return t.as_strided(shape, strides, layout.at("offset", "layout").as_int64("layout offset"));
}

// ---- what a fixture file calls ------------------------------------------------------------------------

// A registry op (through nn::call, autograd on), or one of the few PyTorch functions that are not
// registry ops but compose them or have no gradient (einsum, unique): what a case runs and the
// name of each tensor argument for messages.
struct Callee {
  std::function<std::vector<Tensor>(const std::vector<Tensor>&, const ops::Attrs&)> call;
  std::function<std::string(size_t)> arg_name;
};

Callee registry_callee(const ops::OpDecl& op) {
  return {[&op](const std::vector<Tensor>& in, const ops::Attrs& a) { return tritium::nn::call(op, in, a); },
          [&op](size_t i) { return op.arg_of(i).name; }};
}

// The functions outside the registry that have fixtures, by their fixture file's name.
const std::map<std::string, Callee>& functions_outside_the_registry() {
  static const std::map<std::string, Callee> functions = {
      {"einsum",
       {[](const std::vector<Tensor>& in, const ops::Attrs& a) {
          return std::vector<Tensor>{tritium::einsum(a.get<std::string>("equation"), in)};
        },
        [](size_t i) { return fmt::format("operands[{}]", i); }}},
      {"unique",
       {[](const std::vector<Tensor>& in, const ops::Attrs& a) {
          bool inverse = a.get<bool>("return_inverse"), counts = a.get<bool>("return_counts");
          ops::UniqueResult r = ops::unique(in.at(0), a.get<bool>("sorted"), inverse, counts);
          std::vector<Tensor> out{r.values};  // PyTorch's order: values, then inverse and counts if asked
          if (inverse) out.push_back(r.inverse);
          if (counts) out.push_back(r.counts);
          return out;
        },
        [](size_t) { return std::string("self"); }}},
  };
  return functions;
}

// ---- running a case ---------------------------------------------------------------------------------

// Runs one case; returns the differences from PyTorch (empty: it matches).
std::vector<std::string> run_case(const Callee& op, const io::Json& c, const io::TensorMap& tensors) {
  std::vector<std::string> diffs;
  CaseResources res;
  std::vector<Tensor> inputs;
  for (const io::Json& in : c.at("inputs", "case").as_array("inputs")) inputs.push_back(read_input(in, tensors));
  ops::Attrs attrs = read_attrs(c.at("attrs", "case"), tensors, res);
  const std::string& check = c.at("check", "case").as_string("check");

  std::optional<Tolerance> tol;
  if (const io::Json* t = c.find("tol")) tol = Tolerance{t->at("rtol", "tol").as_double("rtol"), t->at("atol", "tol").as_double("atol")};

  std::map<size_t, std::string> grads;  // input position -> PyTorch's gradient
  if (const io::Json* g = c.find("grads"))
    for (const auto& [pos, name] : g->as_object("grads")) grads[std::stoul(pos)] = name.as_string("grad");
  for (const auto& [pos, _] : grads) {
    inputs.at(pos) = inputs.at(pos).detach();  // a leaf in the recorded layout
    inputs.at(pos).requires_grad_();
  }

  std::vector<Tensor> outs;
  try {
    outs = op.call(inputs, attrs);
    // Checks of the data a kernel reads (a label out of range) are deferred on a GPU, as PyTorch's
    // device-side asserts are: they raise at the next host read or synchronize (docs/ops.md,
    // "Checks on the device"). Synchronize here, so the error belongs to this case and not the next.
    for (const Tensor& t : inputs)
      if (t.defined()) {
        tritium::runtime::synchronize(t.device());
        break;
      }
  } catch (const tritium::Error& e) {
    if (check != "error") diffs.push_back(fmt::format("Tritium raised where PyTorch does not: {}", e.what()));
    return diffs;
  }
  if (check == "error") {
    diffs.push_back(fmt::format("PyTorch raises ({}) but Tritium returned {}",
                                c.at("error", "case").as_string("error"), outs.empty() ? "nothing" : outs[0].str()));
    return diffs;
  }
  const auto& expected = c.at("outputs", "case").as_array("outputs");
  if (outs.size() < expected.size())
    diffs.push_back(fmt::format("Tritium gave {} outputs, PyTorch {}", outs.size(), expected.size()));

  Tensor grad_output;
  if (const io::Json* g = c.find("grad_output")) grad_output = stored(tensors, g->as_string("grad_output"));

  if (check == "dropout") {
    // The mask is ours (Philox, not PyTorch's generator): each output element is 0 or
    // input / (1 - p), and the input's gradient is grad_output scaled by the same mask.
    const Tensor& x = inputs.at(0);
    const Tensor& torch_out = stored(tensors, expected.at(0).as_string("output"));
    if (auto d = compare(ops::zeros_like(outs[0]), ops::zeros_like(torch_out), Tensor(), tol, "output's shape and dtype")) {
      diffs.push_back(*d);
      return diffs;
    }
    double p = attrs.get<double>("p");
    Tensor kept = ops::ne(outs[0].detach(), ops::zeros({}, outs[0].dtype(), outs[0].device()));
    Tensor scaled = ops::to_dtype(ops::div(ops::to_dtype(x.detach(), DType::f64), 1 - p), x.dtype());
    Tensor want = ops::where(kept, scaled, ops::zeros({}, x.dtype(), x.device()));
    if (auto d = compare(outs[0], want, Tensor(), tol, "output (each element 0 or input / (1 - p))")) diffs.push_back(*d);
    if (grad_output.defined() && grads.count(0)) {
      outs[0].backward(grad_output);
      Tensor gscaled = ops::to_dtype(ops::div(ops::to_dtype(grad_output, DType::f64), 1 - p), x.dtype());
      Tensor gwant = ops::where(kept, gscaled, ops::zeros({}, x.dtype(), x.device()));
      if (auto d = compare(x.grad(), gwant, Tensor(), tol, "input's gradient (grad_output through the output's mask)"))
        diffs.push_back(*d);
    }
    return diffs;
  }

  // The float64 reference of f16/bf16 cases: outputs by position, gradients by input position.
  const io::Json* reference = c.find("reference");
  auto reference_output = [&](size_t j) {
    if (!reference) return Tensor();
    const auto& list = reference->at("outputs", "reference").as_array("reference outputs");
    return j < list.size() ? stored(tensors, list[j].as_string("reference output")) : Tensor();
  };
  auto reference_grad = [&](size_t pos) {
    const io::Json* g = reference ? reference->find("grads") : nullptr;
    const io::Json* name = g ? g->find(std::to_string(pos)) : nullptr;
    return name ? stored(tensors, name->as_string("reference grad")) : Tensor();
  };
  for (size_t j = 0; j < expected.size() && j < outs.size(); ++j) {
    std::string what = fmt::format("output {}", j);
    if (auto d = compare(outs[j], stored(tensors, expected[j].as_string("output")), reference_output(j), tol,
                         what.c_str()))
      diffs.push_back(*d);
  }
  if (grad_output.defined() && !grads.empty()) {
    if (!outs[0].requires_grad()) {
      diffs.push_back("the output does not require grad, PyTorch's does");
      return diffs;
    }
    outs[0].backward(grad_output);
    for (const auto& [pos, name] : grads) {
      const Tensor& want = stored(tensors, name);
      Tensor got = inputs[pos].grad();
      if (!got.defined()) got = ops::zeros_like(want);  // no gradient reached it: PyTorch's None is zeros here
      std::string what = fmt::format("gradient of input {} ('{}')", pos, op.arg_name(pos));
      if (auto d = compare(got, want, reference_grad(pos), tol, what.c_str())) diffs.push_back(*d);
    }
  }
  return diffs;
}

struct FixtureFile {
  std::string op;
  std::filesystem::path path;
};

// All fixture files, or those of the ops listed in $TRITIUM_PARITY_OPS ("softmax,sum"), to rerun
// one op while debugging it.
std::vector<FixtureFile> fixture_files(bool honour_filter = true) {
  std::set<std::string> only;
  if (const char* env = std::getenv("TRITIUM_PARITY_OPS"); env && honour_filter) {
    std::string list = env;
    for (size_t start = 0; start <= list.size();) {
      size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) only.insert(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  std::vector<FixtureFile> files;
  for (const auto& entry : std::filesystem::directory_iterator(tt::fixtures_dir() / "torch")) {
    if (entry.path().extension() != ".safetensors") continue;
    std::string name = entry.path().filename().string();
    std::string op = name.substr(0, name.size() - std::string(".safetensors").size());
    if (only.empty() || only.count(op)) files.push_back({op, entry.path()});
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.op < b.op; });
  return files;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_torch_parity)

BOOST_AUTO_TEST_CASE(every_case_matches_pytorch) {
  // The fixtures are PyTorch's exact fp32 on the CPU; on a GPU Tritium's f32 convolutions default to
  // tf32 as PyTorch's do there (cudnn.allow_tf32), so the comparison turns that off for its scope.
  struct ExactConv {
    bool saved = tritium::ops::get_conv_allow_tf32();
    ExactConv() { tritium::ops::set_conv_allow_tf32(false); }
    ~ExactConv() { tritium::ops::set_conv_allow_tf32(saved); }
  } exact_conv;
  // Checks of the data kernels read are deferred on a GPU (runtime/device_checks.h); run them
  // deferred on every backend, so the CPU suite sees the errors arrive as a GPU's do.
  struct DeferredChecks {
    DeferredChecks() { tritium::runtime::set_device_checks_mode(tritium::runtime::DeviceCheckMode::deferred); }
    ~DeferredChecks() { tritium::runtime::set_device_checks_mode(std::nullopt); }
  } deferred_checks;
  std::vector<FixtureFile> files = fixture_files();
  BOOST_TEST_REQUIRE(!files.empty(), "no fixture files under " << (tt::fixtures_dir() / "torch").string());
  tt::for_each_backend([&](const tt::Backend& be) {
    size_t cases = 0, known = 0;
    for (const FixtureFile& f : files) {
      BOOST_TEST_CONTEXT("fixture " << f.path.filename().string()) {
        io::Safetensors file = io::load_safetensors(f.path.string(), be.device);
        io::Json fixture = io::parse_json(file.metadata.at("fixture"), f.path.string() + " fixture metadata");
        BOOST_TEST(fixture.at("format_version", "fixture").as_string("format_version") == "1");
        const std::string& op_name = fixture.at("op", "fixture").as_string("op");
        BOOST_TEST(op_name == f.op, "the file name and its op disagree");
        std::optional<Callee> op;
        if (const ops::OpDecl* decl = ops::op_registry().find(op_name)) op = registry_callee(*decl);
        else if (auto it = functions_outside_the_registry().find(op_name); it != functions_outside_the_registry().end())
          op = it->second;
        if (!op) {
          BOOST_ERROR("fixture " << f.path.string() << " is for op '" << op_name
                                 << "', which neither the op registry nor functions_outside_the_registry() knows "
                                    "(renamed or removed? regenerate with scripts/make_torch_fixtures.py)");
          continue;
        }
        for (const io::Json& c : fixture.at("cases", "fixture").as_array("cases")) {
          const std::string& name = c.at("name", "case").as_string("name");
          ++cases;
          std::vector<std::string> diffs;
          try {
            diffs = run_case(*op, c, file.tensors);
          } catch (const std::exception& e) {  // a broken fixture or a non-Error exception from the op
            diffs.push_back(fmt::format("unexpected exception: {}", e.what()));
          }
          const io::Json* known_difference = c.find("known_difference");
          if (known_difference) {
            ++known;
            if (diffs.empty())
              BOOST_ERROR(op_name << " / " << name << ": marked as a known difference ("
                                  << known_difference->as_string("known_difference")
                                  << ") but now matches PyTorch: remove the mark in scripts/make_torch_fixtures.py "
                                     "and docs/ops.md");
            continue;
          }
          for (const std::string& d : diffs) BOOST_ERROR(op_name << " / " << name << ": " << d);
        }
      }
    }
    BOOST_TEST_MESSAGE("backend " << be.name << ": " << cases << " PyTorch parity cases in " << files.size()
                                  << " ops (" << known << " known differences)");
  });
}

// Registry ops that have no fixtures on purpose, each with the reason. Only ops whose output a
// fixture cannot pin down belong here (sampling ops: our streams are Philox, not PyTorch's
// generator, so a comparison is one of distributions, done in their own tests). dropout has
// fixtures (its check compares the mask's scaling, not the mask).
const std::map<std::string, std::string>& ops_without_fixtures() {
  static const std::map<std::string, std::string> ops = {};
  return ops;
}

// Every registry op has fixtures (issue 29): a new op without any fails here, naming it, until its
// cases are in scripts/make_torch_fixtures.py or it is listed above with the reason.
BOOST_AUTO_TEST_CASE(every_registry_op_has_fixtures) {
  std::set<std::string> with;
  for (const FixtureFile& f : fixture_files(/*honour_filter=*/false)) with.insert(f.op);
  std::vector<std::string> without;
  for (const auto& op : ops::op_registry().all())
    if (!with.count(op->name) && !ops_without_fixtures().count(op->name)) without.push_back(op->name);
  for (const auto& [name, _] : functions_outside_the_registry())
    if (!with.count(name)) without.push_back(name);
  BOOST_TEST(without.empty(), "registry ops without PyTorch parity fixtures (add their cases to "
                              "scripts/make_torch_fixtures.py and run it, or list the op with the reason in "
                              "ops_without_fixtures()): "
                                  << fmt::format("{}", fmt::join(without, ", ")));
  for (const auto& [name, why] : ops_without_fixtures()) {
    BOOST_TEST(ops::op_registry().find(name) != nullptr,
               "ops_without_fixtures() names '" << name << "', which the op registry does not know");
    BOOST_TEST(!with.count(name), "ops_without_fixtures() names '" << name << "' (" << why
                                                                   << "), which has fixtures now: remove it");
  }
}

BOOST_AUTO_TEST_SUITE_END()
