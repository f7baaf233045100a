// Tutorial 01: vector addition, ported from Triton's first tutorial.
#include <tritium/tritium.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace tl = tritium::tl;

int main() {
  auto add = tritium::kernel("add_kernel", [](tl::ptr<float> x_ptr, tl::ptr<float> y_ptr, tl::ptr<float> output_ptr,
                                              tl::i32 n_elements, int BLOCK_SIZE) {
    auto pid = tl::program_id(0);
    auto block_start = pid * BLOCK_SIZE;
    auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
    auto mask = offsets < n_elements;
    auto x = tl::load(x_ptr + offsets, mask);
    auto y = tl::load(y_ptr + offsets, mask);
    tl::store(output_ptr + offsets, x + y, mask);
  });
  int n = 98432;
  std::vector<float> x(n), y(n), out(n, NAN);
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int i = 0; i < n; ++i) x[i] = u(rng), y[i] = u(rng);
  add[{tritium::cdiv(n, 1024)}](x.data(), y.data(), out.data(), n, 1024);
  double err = 0;
  for (int i = 0; i < n; ++i) err = std::max(err, std::abs(double(out[i]) - (double(x[i]) + double(y[i]))));
  std::printf("max error %g\n", err);
  return err == 0 ? 0 : 1;
}
