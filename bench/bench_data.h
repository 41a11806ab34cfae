// The benchmark's inputs: a seeded batch (predictors, target, land mask) for the MNN, and a dump of
// it with the network's initial weights so the PyTorch peer (train_step_torch.py) starts from the
// very same numbers and its first loss can be compared with ours.
#pragma once
#include <string>

#include "model/net.h"
#include "model/tensor.h"

namespace ds::bench {

struct BenchBatch {
  model::Tensor x;     // (N, C, H, W) predictors, uniform in [-1, 1]
  model::Tensor y;     // (N, 1, 4H-3, 4W-3) target: half dry (0), half wet (exponential, mean 5 mm)
  model::Tensor mask;  // (1, 1, 4H-3, 4W-3): about 70% land (1), the rest ocean (0)
};

BenchBatch make_batch(model::Backend& be, const model::Net& net, int batch, uint64_t seed);

// Little-endian binary: "DSB1", int32 count, then per array int32 name length, the name, 4 int32
// dims (NCHW; weights OIHW, biases (1, O, 1, 1)) and the float32 values. Parameters come first in
// Net::params() order, then x, y and mask.
void dump(const std::string& path, model::Net& net, const BenchBatch& b);

}  // namespace ds::bench
