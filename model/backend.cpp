// Backend-independent pieces of backend.h: convolution and pooling geometry (also compiled into
// the CUDA plugin, which therefore must not pull the backend factory: backend_factory.cpp).
#include "model/backend.h"

#include <string>

#include "io/error.h"

namespace ds::model {

bool Backend::all_finite(const std::vector<FloatSpan>& buffers) {
  for (const FloatSpan& b : buffers)
    if (!all_finite(b.size, b.data)) return false;
  return true;
}

void Backend::conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  if (d.y16) throw Error("the " + name() + " backend's conv2d_relu_forward has no 16-bit output (relu_forward is FP32)");
  conv2d_forward(d, x, w, b, y);
  relu_forward(d.out().size(), y, y);
}

void Backend::conv2d_backward(const ConvDesc& d, const float* x, const float* y, const float* dy, const float* w,
                              float* dx, float* dw, float* db, float* scratch) {
  const float* g = dy;
  if (y) {
    if (d.y16)
      relu_backward16(d.out().size(), reinterpret_cast<const uint16_t*>(y), dy, scratch);
    else
      relu_backward(d.out().size(), y, dy, scratch);
    g = scratch;
  }
  if (dw) conv2d_backward_weights(d, x, g, dw, db);
  if (dx) conv2d_backward_data(d, g, w, dx);
}

void Backend::adam_update_many(const std::vector<AdamSpan>& spans, float lr_t, float b1, float b2, float eps) {
  for (const AdamSpan& s : spans) adam_update(s.n, s.w, s.g, s.m, s.v, lr_t, b1, b2, eps);
}

void Backend::copy_channels16(const Shape&, const uint16_t*, const Shape&, int, uint16_t*) {
  throw Error("the " + name() + " backend has no 16-bit activations (copy_channels16)");
}

void Backend::relu_backward16(int64_t, const uint16_t*, const float*, float*) {
  throw Error("the " + name() + " backend has no 16-bit activations (relu_backward16)");
}

void Backend::blocked_global_average_pool_forward(const Shape&, int, const float*, float*) {
  throw Error("the " + name() + " backend keeps no blocked activations (blocked_global_average_pool_forward)");
}

void Backend::blocked_global_average_pool_backward(const Shape&, int, const float*, float*) {
  throw Error("the " + name() + " backend keeps no blocked activations (blocked_global_average_pool_backward)");
}

Shape ConvDesc::out() const {
  if (stride < 1 || kh < 1 || kw < 1) throw Error("bad convolution kernel/stride");
  const int oh = (in.h + pad_top + pad_bottom - kh) / stride + 1;
  const int ow = (in.w + pad_left + pad_right - kw) / stride + 1;
  if (oh < 1 || ow < 1)
    throw Error("convolution " + std::to_string(kh) + "x" + std::to_string(kw) + " does not fit input " + in.str());
  return Shape{in.n, out_c, oh, ow};
}

Shape PoolDesc::out() const {
  if (k < 1 || stride < 1) throw Error("bad pooling window " + std::to_string(k) + " / stride " + std::to_string(stride));
  if (pad_top < 0 || pad_bottom < 0 || pad_left < 0 || pad_right < 0 || pad_top >= k || pad_bottom >= k ||
      pad_left >= k || pad_right >= k)
    throw Error("pooling padding must be in [0, " + std::to_string(k) + ") on every side");
  const int ph = in.h + pad_top + pad_bottom, pw = in.w + pad_left + pad_right;
  if (ph < k || pw < k)
    throw Error("pooling window " + std::to_string(k) + "x" + std::to_string(k) + " does not fit input " + in.str());
  return Shape{in.n, in.c, (ph - k) / stride + 1, (pw - k) / stride + 1};
}

double softmax_cross_entropy_mean(const double* row_loss, int n, int k) {
  double sum = 0;
  for (int r = 0; r < n; ++r) {
    if (row_loss[r] < 0)
      throw Error("softmax cross-entropy: the label of batch row " + std::to_string(r) +
                  " is not a class index in [0, " + std::to_string(k) + ")");
    sum += row_loss[r];
  }
  return n > 0 ? sum / n : 0.0;
}

void same_padding(int k, int& before, int& after) {
  // TensorFlow: pad_total = k - 1, pad_before = pad_total / 2 (floor), the rest after. For an
  // even kernel the extra row/column therefore goes to the bottom/right, unlike PyTorch.
  before = (k - 1) / 2;
  after = (k - 1) - before;
}

}  // namespace ds::model
