// Backend's default upsample_conv2d_*: the plain composition of nearest upsampling and the
// convolution through a temporary of the upsampled size. Any backend is correct with these; the
// CPU backend overrides them with a single convolution on the small input (cpu/dnnl_upsample_conv.cpp).
#include "io/error.h"
#include "model/backend.h"

namespace ds::model {

namespace {

// A buffer of the backend, freed on scope exit.
struct Temp {
  Backend& be;
  float* p;
  Temp(Backend& b, int64_t n) : be(b), p(b.allocate(n)) {}
  ~Temp() { be.release(p); }
};

Shape small_input(const ConvDesc& d, int factor) {
  if (factor < 1 || d.in.h % factor || d.in.w % factor)
    throw Error("upsample_conv2d: input " + d.in.str() + " is not upsampled by " + std::to_string(factor));
  return Shape{d.in.n, d.in.c, d.in.h / factor, d.in.w / factor};
}

}  // namespace

void Backend::upsample_conv2d_forward(const ConvDesc& d, int factor, const float* x, const float* w, const float* b,
                                      float* y) {
  Temp up(*this, d.in.size());
  upsample_nearest_forward(small_input(d, factor), factor, x, up.p);
  conv2d_forward(d, up.p, w, b, y);
}

void Backend::upsample_conv2d_backward_data(const ConvDesc& d, int factor, const float* dy, const float* w,
                                            float* dx) {
  Temp dup(*this, d.in.size());
  conv2d_backward_data(d, dy, w, dup.p);
  upsample_nearest_backward(small_input(d, factor), factor, dup.p, dx);
}

void Backend::upsample_conv2d_backward_weights(const ConvDesc& d, int factor, const float* x, const float* dy,
                                               float* dw, float* db) {
  Temp up(*this, d.in.size());
  upsample_nearest_forward(small_input(d, factor), factor, x, up.p);
  conv2d_backward_weights(d, up.p, dy, dw, db);
}

}  // namespace ds::model
