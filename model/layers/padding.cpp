#include "model/layers/padding.h"

#include <algorithm>

#include "io/error.h"

namespace ds::model {

void resolve_padding(Padding padding, int pad, int in, int k, int stride, int& before, int& after) {
  switch (padding) {
    case Padding::kValid:
      before = after = 0;
      return;
    case Padding::kExplicit:
      if (pad < 0) throw Error("negative explicit padding " + std::to_string(pad));
      before = after = pad;
      return;
    case Padding::kSame: {
      // TensorFlow (tensorflow/core/framework/kernel_shape_util.cc): out = ceil(in / stride),
      // total = max((out - 1) * stride + k - in, 0), before = total / 2. For stride 1 this is
      // k - 1 with the extra row at the bottom for even k (unlike PyTorch).
      const int out = (in + stride - 1) / stride;
      const int total = std::max((out - 1) * stride + k - in, 0);
      before = total / 2;
      after = total - before;
      return;
    }
  }
}

}  // namespace ds::model
