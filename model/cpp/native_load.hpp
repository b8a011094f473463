// Building a vrex::lcp::NativeDecoder from the scripted step module (vrex/script.py's StepModule):
// libtorch reads the parameters, geometry and codebook once; the decoder copies them into its own
// layouts and never touches torch again. Internal to model/cpp (the runner's ScriptedModel).
#pragma once

#include <torch/script.h>

#include "vrex/lcp/native_decoder.hpp"

namespace vrex::lcp {

// std::runtime_error naming the missing or mis-shaped parameter.
NativeWeights native_weights(const torch::jit::Module& step_module);

}  // namespace vrex::lcp
