// A hook for tools that study what a program compiles (tools/first_run_census.cpp lists the
// kernels a training run compiles and generates each for a GPU): `compile` calls the observer with
// every function it is given, after the passes and before the caches are consulted, on the
// compiling thread. The observer may read and change the function (what it changes is compiled).
#pragma once
#include <functional>

#include "jit/compiled_kernel.h"

namespace tritium::jit {

using CompileObserver = std::function<void(ir::Function&, const runtime::Device&, const CompileOptions&)>;
// Replaces the observer; an empty one (the default) is never called. Not for concurrent use with
// compiles in flight.
void set_compile_observer(CompileObserver observer);

}  // namespace tritium::jit
