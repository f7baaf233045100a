#include "nn/init.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "nn/autograd.h"

namespace tritium::nn::init {

namespace {

void check_defined(const Tensor& t, const char* fn) {
  if (!t.defined()) fail("nn::init::{}: the tensor is undefined", fn);
  if (!is_float(t.dtype())) fail("nn::init::{}: expects a floating-point tensor, got {}", fn, t.str());
}

// Writes `values` (same shape) into `tensor` in place, outside autograd.
Tensor& write(Tensor& tensor, const Tensor& values) {
  NoGradGuard no_grad;
  Tensor dst = tensor.detach();
  dst.copy_(values);
  return tensor;
}

double fan_for_mode(const Tensor& t, const std::string& mode) {
  if (mode != "fan_in" && mode != "fan_out") fail("nn::init: mode {} not supported, please use one of fan_in, fan_out", mode);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return static_cast<double>(mode == "fan_in" ? fan_in : fan_out);
}

}  // namespace

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  for (const char* linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                             "conv_transpose3d", "sigmoid"})
    if (nonlinearity == linear) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    double slope = param.value_or(0.01);
    if (!std::isfinite(slope)) fail("nn::init::calculate_gain: negative_slope {} not a valid number", slope);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4;
  fail("nn::init::calculate_gain: unsupported nonlinearity {}", nonlinearity);
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  if (!tensor.defined()) fail("nn::init: the tensor is undefined");
  if (tensor.dim() < 2)
    fail("nn::init: fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got {})",
         tensor.str());
  int64_t receptive = 1;
  for (int d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor& uniform_(Tensor& tensor, double a, double b, Generator& gen) {
  check_defined(tensor, "uniform_");
  NoGradGuard no_grad;
  Tensor dst = tensor.detach();
  tritium::uniform_(dst, a, b, gen);
  return tensor;
}

Tensor& normal_(Tensor& tensor, double mean, double std, Generator& gen) {
  check_defined(tensor, "normal_");
  NoGradGuard no_grad;
  Tensor dst = tensor.detach();
  tritium::normal_(dst, mean, std, gen);
  return tensor;
}

Tensor& trunc_normal_(Tensor& tensor, double mean, double std, double a, double b, Generator& gen) {
  check_defined(tensor, "trunc_normal_");
  if (!(std > 0)) fail("nn::init::trunc_normal_: std must be positive, got {}", std);
  if (!(a < b)) fail("nn::init::trunc_normal_: the interval [a, b] = [{}, {}] is empty", a, b);
  auto cdf = [](double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; };
  double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  NoGradGuard no_grad;
  // Sampled in f32 whatever the tensor's dtype (erfinv near +-1 needs the precision), then written.
  Tensor u = ops::rand(tensor.shape(), gen, DType::f32, tensor.device());
  u = ops::add(ops::mul(u, 2 * hi - 2 * lo), 2 * lo - 1);  // U[2 lo - 1, 2 hi - 1)
  Tensor v = ops::add(ops::mul(ops::erfinv(u), std * std::sqrt(2.0)), mean);
  return write(tensor, tritium::clamp(v, ops::Scalar(a), ops::Scalar(b)));
}

Tensor& constant_(Tensor& tensor, double value) {
  check_defined(tensor, "constant_");
  NoGradGuard no_grad;
  Tensor dst = tensor.detach();
  dst.fill_(value);
  return tensor;
}

Tensor& ones_(Tensor& tensor) { return constant_(tensor, 1.0); }
Tensor& zeros_(Tensor& tensor) { return constant_(tensor, 0.0); }

Tensor& eye_(Tensor& tensor) {
  check_defined(tensor, "eye_");
  if (tensor.dim() != 2) fail("nn::init::eye_: only tensors with 2 dimensions are supported, got {}", tensor.str());
  Tensor rows = ops::arange(0, tensor.size(0), 1, DType::i64, tensor.device()).unsqueeze(1);
  Tensor cols = ops::arange(0, tensor.size(1), 1, DType::i64, tensor.device()).unsqueeze(0);
  return write(tensor, ops::to_dtype(ops::eq(rows, cols), tensor.dtype()));
}

Tensor& xavier_uniform_(Tensor& tensor, double gain, Generator& gen) {
  check_defined(tensor, "xavier_uniform_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  double a = std::sqrt(3.0) * std;
  return init::uniform_(tensor, -a, a, gen);
}

Tensor& xavier_normal_(Tensor& tensor, double gain, Generator& gen) {
  check_defined(tensor, "xavier_normal_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return init::normal_(tensor, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

Tensor& kaiming_uniform_(Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity,
                         Generator& gen) {
  check_defined(tensor, "kaiming_uniform_");
  if (tensor.numel() == 0) return tensor;  // PyTorch warns: a no-op
  double std = calculate_gain(nonlinearity, a) / std::sqrt(fan_for_mode(tensor, mode));
  double bound = std::sqrt(3.0) * std;
  return init::uniform_(tensor, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& tensor, double a, const std::string& mode, const std::string& nonlinearity,
                        Generator& gen) {
  check_defined(tensor, "kaiming_normal_");
  if (tensor.numel() == 0) return tensor;
  double std = calculate_gain(nonlinearity, a) / std::sqrt(fan_for_mode(tensor, mode));
  return init::normal_(tensor, 0.0, std, gen);
}

Tensor& orthogonal_(Tensor& tensor, double gain, Generator& gen) {
  check_defined(tensor, "orthogonal_");
  if (tensor.dim() < 2)
    fail("nn::init::orthogonal_: only tensors with 2 or more dimensions are supported, got {}", tensor.str());
  if (tensor.numel() == 0) return tensor;
  const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  // A tall m x n gaussian (the transpose when rows < cols), row-major, in double on the host.
  const bool transposed = rows < cols;
  const int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  std::vector<float> drawn = ops::randn({rows, cols}, gen, DType::f32, tensor.device()).to_vector<float>();
  std::vector<double> a(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double v = drawn[static_cast<size_t>(i * cols + j)];
      if (transposed) a[static_cast<size_t>(j * n + i)] = v;
      else a[static_cast<size_t>(i * n + j)] = v;
    }
  auto at = [&](std::vector<double>& mat, int64_t i, int64_t j) -> double& { return mat[static_cast<size_t>(i * n + j)]; };
  // Householder QR: reflector k zeroes column k below the diagonal; diag(R) is kept for the signs.
  std::vector<std::vector<double>> reflectors;
  std::vector<double> r_diag(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> v(static_cast<size_t>(m - k));
    double norm = 0;
    for (int64_t i = k; i < m; ++i) norm += at(a, i, k) * at(a, i, k);
    norm = std::sqrt(norm);
    double alpha = at(a, k, k) > 0 ? -norm : norm;  // R[k][k] = alpha
    for (int64_t i = k; i < m; ++i) v[static_cast<size_t>(i - k)] = at(a, i, k);
    v[0] -= alpha;
    double vnorm2 = 0;
    for (double x : v) vnorm2 += x * x;
    if (vnorm2 > 0)
      for (int64_t j = k; j < n; ++j) {
        double dot = 0;
        for (int64_t i = k; i < m; ++i) dot += v[static_cast<size_t>(i - k)] * at(a, i, j);
        double f = 2 * dot / vnorm2;
        for (int64_t i = k; i < m; ++i) at(a, i, j) -= f * v[static_cast<size_t>(i - k)];
      }
    r_diag[static_cast<size_t>(k)] = at(a, k, k);
    reflectors.push_back(std::move(v));
  }
  // Q (m x n) = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity.
  std::vector<double> q(static_cast<size_t>(m * n), 0.0);
  for (int64_t j = 0; j < n; ++j) at(q, j, j) = 1;
  for (int64_t k = n - 1; k >= 0; --k) {
    const auto& v = reflectors[static_cast<size_t>(k)];
    double vnorm2 = 0;
    for (double x : v) vnorm2 += x * x;
    if (vnorm2 == 0) continue;
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[static_cast<size_t>(i - k)] * at(q, i, j);
      double f = 2 * dot / vnorm2;
      for (int64_t i = k; i < m; ++i) at(q, i, j) -= f * v[static_cast<size_t>(i - k)];
    }
  }
  // Column j times sign(R[j][j]) (PyTorch: q *= d.sign()), times gain, back in the tensor's layout.
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double d = r_diag[static_cast<size_t>(j)];
      double s = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;
      float v = static_cast<float>(gain * s * at(q, i, j));
      if (transposed) out[static_cast<size_t>(j * cols + i)] = v;
      else out[static_cast<size_t>(i * cols + j)] = v;
    }
  Tensor values = Tensor::from_vector(out, {rows, cols}, tensor.device()).reshape(tensor.shape());
  return write(tensor, values);
}

}  // namespace tritium::nn::init
