// Backend's default upsample_conv2d_*: the plain composition of nearest upsampling and the
// convolution, through the caller's scratch buffer of the upsampled size; the ReLU forms run the
// plain ReLU ops around them. Any backend is correct
// with these; the CPU backend overrides them with a single convolution on the small input
// (cpu/dnnl_upsample_conv.cpp).
#include "io/error.h"
#include "model/backend.h"

namespace ds::model {

namespace {

// The composition runs FP32 ops (upsampling, ReLU) on x and y: no 16-bit activations here. The
// Net gives them only to backends whose upsample-convs take them (the CPU's polyphase form).
void refuse_16bit(const Backend& be, const ConvDesc& d) {
  if (d.x16 || d.y16)
    throw Error("upsample_conv2d on the " + be.name() + " backend: 16-bit activations need its own form (" +
                d.in.str() + ")");
}

Shape small_input(const ConvDesc& d, int factor) {
  if (factor < 1 || d.in.h % factor || d.in.w % factor)
    throw Error("upsample_conv2d: input " + d.in.str() + " is not upsampled by " + std::to_string(factor));
  return Shape{d.in.n, d.in.c, d.in.h / factor, d.in.w / factor};
}

}  // namespace

int64_t Backend::upsample_conv2d_scratch(const ConvDesc& d, int /*factor*/) const { return d.in.size(); }

void Backend::upsample_conv2d_forward(const ConvDesc& d, int factor, const float* x, const float* w, const float* b,
                                      float* y, float* scratch) {
  refuse_16bit(*this, d);
  upsample_nearest_forward(small_input(d, factor), factor, x, scratch);
  conv2d_forward(d, scratch, w, b, y);
}

void Backend::upsample_conv2d_backward_data(const ConvDesc& d, int factor, const float* dy, const float* w,
                                            float* dx, float* scratch) {
  refuse_16bit(*this, d);
  conv2d_backward_data(d, dy, w, scratch);
  upsample_nearest_backward(small_input(d, factor), factor, scratch, dx);
}

void Backend::upsample_conv2d_backward_weights(const ConvDesc& d, int factor, const float* x, const float* dy,
                                               float* dw, float* db, float* scratch) {
  refuse_16bit(*this, d);
  upsample_nearest_forward(small_input(d, factor), factor, x, scratch);
  conv2d_backward_weights(d, scratch, dy, dw, db);
}

void Backend::upsample_conv2d_relu_forward(const ConvDesc& d, int factor, const float* x, const float* w,
                                           const float* b, float* y, float* scratch) {
  refuse_16bit(*this, d);
  upsample_conv2d_forward(d, factor, x, w, b, y, scratch);
  relu_forward(d.out().size(), y, y);
}

// The masked gradient goes after the forward's scratch, which the two calls below use.
int64_t Backend::upsample_conv2d_backward_scratch(const ConvDesc& d, int factor, bool relu) const {
  return upsample_conv2d_scratch(d, factor) + (relu ? d.out().size() : 0);
}

void Backend::upsample_conv2d_backward(const ConvDesc& d, int factor, const float* x, const float* y,
                                       const float* dy, const float* w, float* dx, float* dw, float* db,
                                       float* scratch) {
  refuse_16bit(*this, d);
  if (y) {
    float* masked = scratch + upsample_conv2d_scratch(d, factor);
    relu_backward(d.out().size(), y, dy, masked);
    dy = masked;
  }
  upsample_conv2d_backward_weights(d, factor, x, dy, dw, db, scratch);
  if (dx) upsample_conv2d_backward_data(d, factor, dy, w, dx, scratch);
}

}  // namespace ds::model
