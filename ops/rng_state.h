// Seeds and generator states (torch.manual_seed, seed, initial_seed, get_rng_state /
// set_rng_state, torch.random.fork_rng). A Generator is a Philox key (its seed) and a counter
// offset (ops/ops.h); its state is those two as 16 bytes, a u8 tensor on the CPU (as PyTorch's
// CUDA generator state: seed, then offset, little-endian u64s). Restoring a state restores the
// exact stream that follows it. Streams do not depend on the device (docs/ops.md, "Random
// sampling"), so there is one default generator for every device and a state from any generator
// restores any other.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

inline constexpr int64_t kRngStateBytes = 16;

// The generator's state ([16] u8, CPU) and its restoration; a state that is not a 1-D u8 tensor
// of 16 bytes is an error naming what it is.
Tensor get_rng_state(const Generator& gen);
void set_rng_state(Generator& gen, const Tensor& state);
// A non-deterministic seed (std::random_device mixed with the clock), set and returned
// (torch.Generator.seed()); initial_seed is the seed the generator was last seeded with.
uint64_t seed(Generator& gen);
uint64_t initial_seed(const Generator& gen);

// The same on the default generator (torch.manual_seed / seed / initial_seed / get_rng_state /
// set_rng_state, torch.cuda.* alike: one generator serves every device).
void manual_seed(uint64_t seed);
uint64_t seed();
uint64_t initial_seed();
Tensor get_rng_state();
void set_rng_state(const Tensor& state);
// torch.cuda.default_generators[i] / torch.default_generator: the one default generator.
Generator& default_generator(Device device);

// torch.random.fork_rng: saves the generators' states (the default generator when none are
// named) and restores them when the scope ends, whatever the scope did with them.
class ForkRng {
 public:
  explicit ForkRng(std::vector<Generator*> generators = {&default_generator()});
  ~ForkRng();
  ForkRng(const ForkRng&) = delete;
  ForkRng& operator=(const ForkRng&) = delete;

 private:
  std::vector<Generator*> generators_;
  std::vector<Generator> saved_;
};

}  // namespace tritium::ops
