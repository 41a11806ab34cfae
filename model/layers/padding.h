// How a convolution or pooling layer pads its input (Keras' padding argument, plus PyTorch's
// explicit one). Shared by Conv2D and Pool2D; the backend only ever sees per-side amounts.
#pragma once

namespace ds::model {

// kSame: TensorFlow's rule for any stride: out = ceil(in / stride), total padding
//   max((ceil(in/s) - 1) * s + k - in, 0), the smaller half at the top/left.
// kValid: none; windows that would run past the edge are dropped.
// kExplicit: `pad` rows/columns on every side (PyTorch's padding=p; torchvision's ResNet/Inception).
enum class Padding { kSame, kValid, kExplicit };

// The padding before/after one spatial axis of size `in` for a window k every `stride`.
void resolve_padding(Padding padding, int pad, int in, int k, int stride, int& before, int& after);

}  // namespace ds::model
