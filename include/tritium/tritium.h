// The one header a Tritium user includes.
#pragma once
#include "common/error.h"
#include "dsl/block_ptr.h"
#include "dsl/control_flow.h"
#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "dsl/random.h"
#include "dsl/tensor.h"
#include "runtime/device.h"
#include "runtime/tensor.h"
