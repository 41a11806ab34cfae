// The loss record that masked_loss_accumulate (loss.h) adds into: two doubles in backend memory,
// [0] the sum of the weighted mean losses, [1] the first step whose loss was not finite (< 0:
// none). A training step adds its loss there without the host waiting for the GPU; the value is
// read back only when someone needs it (a progress line, the divergence check, an epoch's end),
// as the trainer, the training-step benchmark and the layer profile all do.
#pragma once
#include <array>

#include "model/tensor.h"

namespace ds::model {

class LossAccumulator {
 public:
  explicit LossAccumulator(Backend& be) : t_(be, {1, 1, 1, 4}) { reset(); }

  // Sum `sum`, no non-finite step yet.
  void reset(double sum = 0.0) {
    const double host[2] = {sum, -1.0};
    t_.upload(reinterpret_cast<const float*>(host));
  }
  // What masked_loss_accumulate's `acc` takes.
  double* data() { return reinterpret_cast<double*>(t_.data()); }
  // {sum, first non-finite step}: one download, so it waits for the work queued before it.
  std::array<double, 2> read() const {
    std::array<double, 2> host{};
    t_.download(reinterpret_cast<float*>(host.data()));
    return host;
  }

 private:
  Tensor t_;  // 4 floats hold the 2 doubles
};

}  // namespace ds::model
