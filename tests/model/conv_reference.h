// Naive double-precision convolution loops: the references the CPU backend's convolutions (plain,
// blocked, polyphase) are checked against. Zero padding per side as ConvDesc says.
#pragma once
#include <vector>

#include "model/backend.h"

namespace ds::model::test {

struct ConvGrads {
  std::vector<double> dx, dw, db;
};

// A convolution's geometry in one expression (padding per side, as ConvDesc holds it).
inline ConvDesc conv_desc(Shape in, int out_c, int kh, int kw, int stride, int top, int bottom, int left, int right) {
  ConvDesc d;
  d.in = in;
  d.out_c = out_c;
  d.kh = kh;
  d.kw = kw;
  d.stride = stride;
  d.pad_top = top;
  d.pad_bottom = bottom;
  d.pad_left = left;
  d.pad_right = right;
  return d;
}

// A k x k stride-1 convolution with Keras 'same' padding (the extra row/column bottom/right).
inline ConvDesc same_conv(Shape in, int out_c, int k) {
  ConvDesc d;
  d.in = in;
  d.out_c = out_c;
  d.kh = d.kw = k;
  same_padding(k, d.pad_top, d.pad_bottom);
  same_padding(k, d.pad_left, d.pad_right);
  return d;
}

// Calls f(y_index, x_index, w_index) for every multiply-add of the convolution d, that is
// y[y_index] += x[x_index] * w[w_index], taps outside x (the zero padding) skipped.
template <class F>
void for_each_tap(const ConvDesc& d, F&& f) {
  const Shape o = d.out();
  for (int n = 0; n < o.n; ++n)
    for (int oc = 0; oc < o.c; ++oc)
      for (int i = 0; i < o.h; ++i)
        for (int j = 0; j < o.w; ++j)
          for (int c = 0; c < d.in.c; ++c)
            for (int a = 0; a < d.kh; ++a)
              for (int e = 0; e < d.kw; ++e) {
                const int r = i * d.stride + a - d.pad_top, q = j * d.stride + e - d.pad_left;
                if (r < 0 || r >= d.in.h || q < 0 || q >= d.in.w) continue;
                f(size_t(((n * o.c + oc) * o.h + i) * o.w + j), size_t(((n * d.in.c + c) * d.in.h + r) * d.in.w + q),
                  size_t(((oc * d.in.c + c) * d.kh + a) * d.kw + e));
              }
}

// y[n,o,i,j] = b[o] + sum_{c,a,e} x[n,c,i+a-top,j+e-left] w[o,c,a,e], zero outside x.
inline std::vector<double> naive_conv(const ConvDesc& d, const std::vector<float>& x, const std::vector<float>& w,
                                      const std::vector<float>& b) {
  const Shape o = d.out();
  std::vector<double> y(size_t(o.size()));
  for (size_t i = 0; i < y.size(); ++i) y[i] = b[(i / size_t(o.h * o.w)) % size_t(o.c)];
  for_each_tap(d, [&](size_t yi, size_t xi, size_t wi) { y[yi] += double(x[xi]) * w[wi]; });
  return y;
}

// The gradients of sum(y * dy) with respect to x, w and b.
inline ConvGrads naive_conv_backward(const ConvDesc& d, const std::vector<float>& x, const std::vector<float>& w,
                                     const std::vector<float>& dy) {
  const Shape o = d.out();
  ConvGrads g{std::vector<double>(x.size()), std::vector<double>(w.size()), std::vector<double>(size_t(o.c))};
  for (size_t i = 0; i < dy.size(); ++i) g.db[(i / size_t(o.h * o.w)) % size_t(o.c)] += dy[i];
  for_each_tap(d, [&](size_t yi, size_t xi, size_t wi) {
    g.dx[xi] += double(w[wi]) * dy[yi];
    g.dw[wi] += double(x[xi]) * dy[yi];
  });
  return g;
}

// Keras' nearest upsampling of an NCHW tensor: each pixel becomes an f x f block.
inline std::vector<float> upsample_nearest(const Shape& s, int f, const std::vector<float>& x) {
  std::vector<float> y(size_t(s.size()) * f * f);
  const int H = s.h * f, W = s.w * f;
  for (int nc = 0; nc < s.n * s.c; ++nc)
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < W; ++j)
        y[(size_t(nc) * H + i) * W + j] = x[(size_t(nc) * s.h + i / f) * s.w + j / f];
  return y;
}

// The adjoint of upsample_nearest: each f x f block's sum (s is the small shape).
inline std::vector<double> sum_blocks(const Shape& s, int f, const std::vector<double>& big) {
  std::vector<double> y(size_t(s.size()));
  const int H = s.h * f, W = s.w * f;
  for (int nc = 0; nc < s.n * s.c; ++nc)
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < W; ++j) y[(size_t(nc) * s.h + i / f) * s.w + j / f] += big[(size_t(nc) * H + i) * W + j];
  return y;
}

}  // namespace ds::model::test
