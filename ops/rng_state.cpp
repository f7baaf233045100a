// Seeds and generator states (ops/rng_state.h).
#include "ops/rng_state.h"

#include <chrono>
#include <random>

#include <fmt/format.h>

namespace tritium::ops {

namespace {

// gen's seed and offset read together (a copy is taken under its lock).
Generator::Stream read(const Generator& gen) {
  Generator copy(gen);
  return {copy.seed(), copy.offset()};
}

// Sets gen to (seed, offset) in one assignment, so no draw sees half of it.
void write(Generator& gen, uint64_t seed, uint64_t offset) {
  Generator state(seed);
  state.advance(offset);
  gen = state;
}

}  // namespace

Tensor get_rng_state(const Generator& gen) {
  Generator::Stream s = read(gen);
  std::vector<uint8_t> bytes(kRngStateBytes);
  for (int b = 0; b < 8; ++b) {
    bytes[b] = static_cast<uint8_t>(s.seed >> (8 * b));
    bytes[8 + b] = static_cast<uint8_t>(s.offset >> (8 * b));
  }
  return Tensor::from_vector(bytes, {kRngStateBytes}, Device::cpu());
}

void set_rng_state(Generator& gen, const Tensor& state) {
  if (!state.defined()) fail("set_rng_state: the state tensor is undefined");
  if (state.dtype() != DType::u8)
    fail("set_rng_state: RNG state must be a u8 (byte) tensor, got {}", state.str());
  if (state.dim() != 1 || state.numel() != kRngStateBytes)
    fail("set_rng_state: RNG state is wrong size: expected a 1-D tensor of {} bytes (seed and offset), got {}",
         kRngStateBytes, state.str());
  std::vector<uint8_t> bytes = state.to_vector<uint8_t>();
  uint64_t seed = 0, offset = 0;
  for (int b = 0; b < 8; ++b) {
    seed |= static_cast<uint64_t>(bytes[b]) << (8 * b);
    offset |= static_cast<uint64_t>(bytes[8 + b]) << (8 * b);
  }
  write(gen, seed, offset);
}

uint64_t seed(Generator& gen) {
  std::random_device device;
  uint64_t s = (static_cast<uint64_t>(device()) << 32) ^ device() ^
               static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  gen.manual_seed(s);
  return s;
}

uint64_t initial_seed(const Generator& gen) { return gen.seed(); }

void manual_seed(uint64_t s) { default_generator().manual_seed(s); }
uint64_t seed() { return seed(default_generator()); }
uint64_t initial_seed() { return initial_seed(default_generator()); }
Tensor get_rng_state() { return get_rng_state(default_generator()); }
void set_rng_state(const Tensor& state) { set_rng_state(default_generator(), state); }
Generator& default_generator(Device) { return default_generator(); }

ForkRng::ForkRng(std::vector<Generator*> generators) : generators_(std::move(generators)) {
  for (Generator* g : generators_) {
    if (!g) fail("fork_rng: a generator pointer is null");
    saved_.push_back(*g);
  }
}

ForkRng::~ForkRng() {
  for (size_t i = 0; i < generators_.size(); ++i) *generators_[i] = saved_[i];
}

}  // namespace tritium::ops
