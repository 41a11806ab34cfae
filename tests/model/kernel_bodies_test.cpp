// The CUDA kernels' bodies (model/kernels/*.h) run on the CPU, over every index, against the CPU
// backend's op on random data. The .cu kernels are only grid-stride loops around these bodies, so
// an index or formula mistake in a kernel shows up here, on a machine without a GPU.
//
// Tolerances: data movement (fill, ReLU, copies, padding, upsampling forward, scatter/gather,
// dropout, max pooling) must match exactly (-0 == +0: oneDNN's ReLU gradient is dy * 0). Arithmetic the two sides write as the same float
// expression (accumulate, scale, multiply, axpby, Adam, SGD, sigmoid) is allowed 4 ulp, for a
// compiler that contracts a*b+c into an FMA on one side only. Sums whose order differs (the f x f
// upsampling gradient, average pooling, batch-norm statistics and gradients, bias gradients) are
// compared relative to the largest magnitude involved: 1e-5 (float rounding over at most a few
// hundred terms is ~1e-6). Loss sums are in double on both sides: relative 1e-12.
// On the GPU the same bodies differ only by the device's expf/sqrtf (within 2 ulp, CUDA's
// documented bounds), which tests/model/cuda_backend_test.cpp checks when a GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "conv_reference.h"
#include "model/kernels/batch_norm.h"
#include "model/kernels/copy.h"
#include "model/kernels/dropout.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/gather.h"
#include "model/kernels/loss.h"
#include "model/kernels/optimizer.h"
#include "model/kernels/points.h"
#include "model/kernels/polyphase.h"
#include "model/kernels/pooling.h"
#include "model/kernels/sigmoid.h"
#include "model/kernels/upsample.h"
#include "model/kernels/wire16.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::random_values;
using test::same_conv;
namespace k = kernels;

// What a grid-stride launch does, on one thread: the body at every index of [0, n).
template <typename Body>
void for_all(int64_t n, Body body) {
  for (int64_t i = 0; i < n; ++i) body(i);
}

int64_t ulps(float a, float b) {
  if (a == b) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<int64_t>::max();
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = int32_t(0x80000000u) - ia;  // map to a monotonic integer line
  if (ib < 0) ib = int32_t(0x80000000u) - ib;
  return std::abs(int64_t(ia) - int64_t(ib));
}

void expect_exact(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(want[i] == got[i] || (std::isnan(want[i]) && std::isnan(got[i]))) && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "]: backend " << want[i] << " body " << got[i];
  EXPECT_EQ(bad, 0) << what;
}

void expect_ulps(const std::vector<float>& want, const std::vector<float>& got, int64_t max_ulps,
                 const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (ulps(want[i], got[i]) > max_ulps && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "]: backend " << want[i] << " body " << got[i];
  EXPECT_EQ(bad, 0) << what;
}

using test::expect_close;

class KernelBodies : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend(1);
  // A CPU-backend tensor holding v (CPU backend memory is host memory: bodies can use .data()).
  Tensor t(Shape s, const std::vector<float>& v) { return test::make_tensor(*cpu_, s, v); }
  Tensor t(Shape s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    return t(s, random_values(size_t(s.size()), seed, lo, hi));
  }
};

TEST_F(KernelBodies, Elementwise) {
  const Shape s{3, 4, 5, 7};
  const int64_t n = s.size();
  const auto xv = random_values(n, 1, -3.0f, 3.0f), dyv = random_values(n, 2), yv = random_values(n, 3);
  {
    Tensor a = t(s, yv);
    std::vector<float> b = yv;
    cpu_->fill(a.data(), n, 2.5f);
    for_all(n, [&](int64_t i) { k::fill_at(i, b.data(), 2.5f); });
    expect_exact(a.to_host(), b, "fill");
  }
  {
    std::vector<float> x = xv;
    x[0] = 0.0f;
    x[1] = -0.0f;  // ReLU's kink: gradient 0 there on both sides
    Tensor xt = t(s, x), y = t(s, yv), dx = t(s, yv);
    std::vector<float> y2(n), dx2(n);
    cpu_->relu_forward(n, xt.data(), y.data());
    for_all(n, [&](int64_t i) { k::relu_forward_at(i, x.data(), y2.data()); });
    expect_exact(y.to_host(), y2, "relu forward");
    cpu_->relu_backward(n, xt.data(), dyv.data(), dx.data());
    for_all(n, [&](int64_t i) { k::relu_backward_at(i, x.data(), dyv.data(), dx2.data()); });
    expect_exact(dx.to_host(), dx2, "relu backward");
  }
  {
    Tensor acc = t(s, yv);
    std::vector<float> acc2 = yv;
    cpu_->accumulate(n, xv.data(), acc.data());
    for_all(n, [&](int64_t i) { k::accumulate_at(i, xv.data(), acc2.data()); });
    expect_ulps(acc.to_host(), acc2, 4, "accumulate");
    cpu_->scale(n, 0.37f, acc.data());
    for_all(n, [&](int64_t i) { k::scale_at(i, 0.37f, acc2.data()); });
    expect_ulps(acc.to_host(), acc2, 4, "scale");
  }
  {
    Tensor y = t(s, yv);
    std::vector<float> y2(n);
    cpu_->multiply(n, xv.data(), dyv.data(), y.data());
    for_all(n, [&](int64_t i) { k::multiply_at(i, xv.data(), dyv.data(), y2.data()); });
    expect_ulps(y.to_host(), y2, 4, "multiply");
    std::vector<float> z2 = yv;
    Tensor z = t(s, yv);
    cpu_->axpby(n, -0.7f, xv.data(), 1.3f, z.data());
    for_all(n, [&](int64_t i) { k::axpby_at(i, -0.7f, xv.data(), 1.3f, z2.data()); });
    expect_ulps(z.to_host(), z2, 4, "axpby");
  }
}

TEST_F(KernelBodies, SigmoidChannel) {
  const Shape s{3, 3, 6, 5};
  const int64_t hw = int64_t(s.h) * s.w;
  // Wide range, so both saturations (exp overflow and underflow) are exercised.
  const auto v = random_values(s.size(), 4, -100.0f, 100.0f), g = random_values(s.size(), 5);
  for (int ch = 0; ch < s.c; ++ch) {
    Tensor y = t(s, v);
    std::vector<float> y2 = v;
    cpu_->sigmoid_channel_forward(s, ch, y.data());
    for_all(s.n * hw, [&](int64_t i) { k::sigmoid_channel_forward_at(i, hw, s.c, ch, y2.data()); });
    expect_ulps(y.to_host(), y2, 4, "sigmoid forward, channel " + std::to_string(ch));
    Tensor dy = t(s, g);
    std::vector<float> dy2 = g;
    cpu_->sigmoid_channel_backward(s, ch, y.data(), dy.data());
    for_all(s.n * hw, [&](int64_t i) { k::sigmoid_channel_backward_at(i, hw, s.c, ch, y2.data(), dy2.data()); });
    expect_ulps(dy.to_host(), dy2, 4, "sigmoid backward, channel " + std::to_string(ch));
  }
}

TEST_F(KernelBodies, UpsampleNearest) {
  for (int f : {2, 3}) {
    const Shape in{2, 3, 4, 5}, out{2, 3, 4 * f, 5 * f};
    Tensor x = t(in, 6), y = t(out, 7), dy = t(out, 8), dx = t(in, 9);
    std::vector<float> y2(out.size()), dx2(in.size());
    const auto xh = x.to_host(), dyh = dy.to_host();
    cpu_->upsample_nearest_forward(in, f, x.data(), y.data());
    for_all(out.size(), [&](int64_t i) { k::upsample_forward_at(i, in.h, in.w, f, xh.data(), y2.data()); });
    expect_exact(y.to_host(), y2, "upsample forward x" + std::to_string(f));
    cpu_->upsample_nearest_backward(in, f, dy.data(), dx.data());
    for_all(in.size(), [&](int64_t i) { k::upsample_backward_at(i, in.h, in.w, f, dyh.data(), dx2.data()); });
    expect_close(dx.to_host(), dx2, 1e-5, "upsample backward x" + std::to_string(f));
  }
}

TEST_F(KernelBodies, ConcatCopies) {
  const Shape a{3, 2, 4, 5}, whole{3, 7, 4, 5};
  const int offset = 3;
  const int64_t hw = int64_t(a.h) * a.w, block = a.c * hw;
  Tensor x = t(a, 10), y = t(whole, 11), back = t(a, 12);
  std::vector<float> y2 = y.to_host(), back2(a.size());
  const auto xh = x.to_host();
  cpu_->copy_channels(a, x.data(), whole, offset, y.data());
  for_all(a.n * block, [&](int64_t i) {
    k::strided_block_copy_at(i, block, xh.data(), block, y2.data() + offset * hw, whole.c * hw);
  });
  expect_exact(y.to_host(), y2, "copy_channels");
  cpu_->slice_channels(a, offset, whole, y.data(), back.data());
  for_all(a.n * block, [&](int64_t i) {
    k::strided_block_copy_at(i, block, y2.data() + offset * hw, whole.c * hw, back2.data(), block);
  });
  expect_exact(back.to_host(), back2, "slice_channels");
}

// cuDNN pads symmetrically only: the CUDA backend pads (pad_at) into a copy, convolves with no
// padding, and crops (crop_at) backward-data's result. On the CPU backend the same recipe must
// give what its own asymmetric-padding convolution gives.
TEST_F(KernelBodies, PadAndCropAroundConvolution) {
  ConvDesc d;
  d.in = Shape{2, 3, 7, 6};
  d.out_c = 4;
  d.kh = d.kw = 4;
  same_padding(4, d.pad_top, d.pad_bottom);  // 1 top, 2 bottom: Keras 'same', even kernel
  same_padding(4, d.pad_left, d.pad_right);
  ConvDesc p = d;
  p.in.h += d.pad_top + d.pad_bottom;
  p.in.w += d.pad_left + d.pad_right;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 0;
  ASSERT_EQ(p.out(), d.out());
  Tensor x = t(d.in, 13), w = t(Shape{4, 3, 4, 4}, 14), b = t(Shape{1, 4, 1, 1}, 15);
  Tensor y = t(d.out(), 16), y2 = t(d.out(), 16), dy = t(d.out(), 17), dx = t(d.in, 18), dx2 = t(d.in, 18);
  Tensor xp = t(p.in, 19), dxp = t(p.in, 20);
  for_all(p.in.size(),
          [&](int64_t i) { k::pad_at(i, d.in.h, d.in.w, d.pad_top, d.pad_left, p.in.h, p.in.w, x.data(), xp.data()); });
  cpu_->conv2d_forward(d, x.data(), w.data(), b.data(), y.data());
  cpu_->conv2d_forward(p, xp.data(), w.data(), b.data(), y2.data());
  expect_close(y.to_host(), y2.to_host(), 1e-5, "padded convolution forward");
  cpu_->conv2d_backward_data(d, dy.data(), w.data(), dx.data());
  cpu_->conv2d_backward_data(p, dy.data(), w.data(), dxp.data());
  for_all(d.in.size(), [&](int64_t i) {
    k::crop_at(i, p.in.h, p.in.w, d.pad_top, d.pad_left, d.in.h, d.in.w, dxp.data(), dx2.data());
  });
  expect_close(dx.to_host(), dx2.to_host(), 1e-5, "cropped backward data");
}

// The multi-tensor Adam's work list (Backend::adam_update_many on the GPU): every element of
// every span in exactly one chunk of at most kAdamChunk, chunks in span order; and the kernel's
// walk (a block per chunk, its threads over the elements) over four tensors, one empty and one of
// several chunks, gives each tensor what adam_at over it alone gives, bit for bit.
TEST_F(KernelBodies, AdamChunksCoverEverySpanOnce) {
  const std::vector<int64_t> sizes = {5, 0, k::kAdamChunk, 3 * k::kAdamChunk + 7, k::kAdamChunk - 1, 1};
  std::vector<k::AdamChunk> chunks(size_t(k::adam_chunk_count(sizes.data(), int(sizes.size()))));
  ASSERT_EQ(chunks.size(), 1u + 0 + 1 + 4 + 1 + 1);
  k::adam_chunks(sizes.data(), int(sizes.size()), chunks.data());
  std::vector<std::vector<int>> seen;
  for (int64_t n : sizes) seen.emplace_back(size_t(n), 0);
  int last = 0;
  for (const k::AdamChunk& c : chunks) {
    ASSERT_GE(c.span, last) << "span order";
    last = c.span;
    ASSERT_LT(c.begin, c.end);
    ASSERT_LE(c.end - c.begin, k::kAdamChunk);
    ASSERT_LE(c.end, sizes[size_t(c.span)]);
    for (int64_t i = c.begin; i < c.end; ++i) ++seen[size_t(c.span)][size_t(i)];
  }
  for (size_t s = 0; s < sizes.size(); ++s)
    for (int v : seen[s]) ASSERT_EQ(v, 1) << "span " << s;

  const std::vector<int64_t> n = {1000, 0, 2 * k::kAdamChunk + 3, 17};
  std::vector<std::vector<float>> w, m, v, g, w2, m2, v2;
  for (size_t t = 0; t < n.size(); ++t) {
    g.push_back(random_values(n[t], 30 + int(t)));
    w.push_back(random_values(n[t], 40 + int(t)));
    m.push_back(random_values(n[t], 50 + int(t), -0.1f, 0.1f));
    v.push_back(random_values(n[t], 60 + int(t), 0.0f, 0.01f));
  }
  w2 = w, m2 = m, v2 = v;
  std::vector<k::AdamChunk> list(size_t(k::adam_chunk_count(n.data(), int(n.size()))));
  k::adam_chunks(n.data(), int(n.size()), list.data());
  for (int step = 0; step < 2; ++step) {
    for (const k::AdamChunk& c : list)
      for (int thread = 0; thread < 256; ++thread)
        for (int64_t i = c.begin + thread; i < c.end; i += 256) {
          const size_t t = size_t(c.span);
          k::adam_at(i, w[t].data(), g[t].data(), m[t].data(), v[t].data(), 1e-3f, 0.9f, 0.999f, 1e-7f);
        }
    for (size_t t = 0; t < n.size(); ++t)
      for_all(n[t], [&](int64_t i) {
        k::adam_at(i, w2[t].data(), g[t].data(), m2[t].data(), v2[t].data(), 1e-3f, 0.9f, 0.999f, 1e-7f);
      });
  }
  for (size_t t = 0; t < n.size(); ++t) {
    EXPECT_EQ(w[t], w2[t]) << "tensor " << t;
    EXPECT_EQ(m[t], m2[t]) << "tensor " << t;
    EXPECT_EQ(v[t], v2[t]) << "tensor " << t;
  }
}

TEST_F(KernelBodies, Optimizers) {
  const int64_t n = 1000;
  const auto g = random_values(n, 21), w0 = random_values(n, 22), m0 = random_values(n, 23, -0.1f, 0.1f),
             v0 = random_values(n, 24, 0.0f, 0.01f);
  {
    std::vector<float> w = w0, m = m0, v = v0, w2 = w0, m2 = m0, v2 = v0;
    for (int step = 0; step < 3; ++step) {
      cpu_->adam_update(n, w.data(), g.data(), m.data(), v.data(), 1e-3f, 0.9f, 0.999f, 1e-7f);
      for_all(n, [&](int64_t i) { k::adam_at(i, w2.data(), g.data(), m2.data(), v2.data(), 1e-3f, 0.9f, 0.999f, 1e-7f); });
    }
    expect_ulps(m, m2, 4, "adam m");
    expect_ulps(v, v2, 4, "adam v");
    expect_ulps(w, w2, 4, "adam w");
  }
  {
    std::vector<float> w = w0, v = m0, w2 = w0, v2 = m0;
    for (int step = 0; step < 3; ++step) {
      cpu_->sgd_momentum_update(n, w.data(), g.data(), v.data(), 0.01f, 0.9f);
      for_all(n, [&](int64_t i) { k::sgd_momentum_at(i, w2.data(), g.data(), v2.data(), 0.01f, 0.9f); });
    }
    expect_ulps(v, v2, 4, "sgd v");
    expect_ulps(w, w2, 4, "sgd w");
  }
}

TEST_F(KernelBodies, Dropout) {
  const int64_t n = 5000;
  const auto x = random_values(n, 25);
  std::vector<float> y(n), mask(n), y2(n), mask2(n);
  cpu_->dropout_forward(n, 0.3f, 12345, x.data(), y.data(), mask.data());
  const float keep_scale = 1.0f / (1.0f - 0.3f);
  for_all(n, [&](int64_t i) { k::dropout_at(i, 0.3f, keep_scale, 12345, x.data(), y2.data(), mask2.data()); });
  expect_exact(mask, mask2, "dropout mask");
  expect_exact(y, y2, "dropout output");
}

TEST_F(KernelBodies, ScatterGatherPoints) {
  const int n = 3, kk = 2, points = 7;
  const Shape grid{n, kk, 4, 5};
  const int64_t hw = 20;
  const std::vector<float> index{0, 3, 4, 9, 12, 18, 19};
  const auto src = random_values(size_t(n) * kk * points, 26);
  std::vector<float> dst(grid.size()), dst2(grid.size(), -1.0f);
  cpu_->scatter_points(n, kk, points, index.data(), grid, -1.0f, src.data(), dst.data());
  for_all(int64_t(n) * kk * points, [&](int64_t i) { k::scatter_at(i, points, hw, index.data(), src.data(), dst2.data()); });
  expect_exact(dst, dst2, "scatter");
  const auto g = random_values(grid.size(), 27);
  std::vector<float> sg(src.size()), sg2(src.size());
  cpu_->gather_points(n, kk, points, index.data(), grid, g.data(), sg.data());
  for_all(int64_t(sg2.size()), [&](int64_t i) { k::gather_at(i, points, hw, index.data(), g.data(), sg2.data()); });
  expect_exact(sg, sg2, "gather");
}

TEST_F(KernelBodies, Pooling) {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAverage})
    for (int kw : {2, 3})
      for (int stride : {1, 2})
        for (int pad : {0, 1, 2}) {  // 0: 'valid'; 1: symmetric; 2: 0 before, 1 after ('same', even k)
          PoolDesc d;
          d.in = Shape{2, 3, 9, 8};
          d.k = kw;
          d.stride = stride;
          d.kind = kind;
          d.pad_top = d.pad_left = pad == 1 ? 1 : 0;
          d.pad_bottom = d.pad_right = pad == 0 ? 0 : 1;
          const Shape o = d.out();
          const bool max = kind == PoolKind::kMax;
          const std::string what = std::string(max ? "max" : "average") + " pool k" + std::to_string(kw) + " s" +
                                   std::to_string(stride) + " pad" + std::to_string(pad);
          Tensor x = t(d.in, 28), y = t(o, 29), dy = t(o, 30), dx = t(d.in, 31);
          std::vector<float> y2(o.size()), dx2(d.in.size());
          const auto xh = x.to_host(), dyh = dy.to_host();
          cpu_->pool2d_forward(d, x.data(), y.data());
          for_all(o.size(), [&](int64_t i) {
            k::pool_forward_at(i, d.in.h, d.in.w, o.h, o.w, kw, stride, d.pad_top, d.pad_left, max, xh.data(),
                               y2.data());
          });
          if (max)
            expect_exact(y.to_host(), y2, what + " forward");
          else
            expect_close(y.to_host(), y2, 1e-5, what + " forward");
          cpu_->pool2d_backward(d, x.data(), dy.data(), dx.data());
          for_all(d.in.size(), [&](int64_t i) {
            k::pool_backward_at(i, d.in.h, d.in.w, o.h, o.w, kw, stride, d.pad_top, d.pad_left, max, xh.data(),
                                dyh.data(), dx2.data());
          });
          expect_close(dx.to_host(), dx2, 1e-5, what + " backward");
        }
}

// The statistics and parameter gradients are block reductions on the GPU; here the same per-element
// terms are summed in order, in double, as each block does.
TEST_F(KernelBodies, BatchNorm) {
  const Shape s{4, 3, 5, 6};
  const int64_t hw = 30, m = s.n * hw;
  const float eps = 1e-3f;
  Tensor x = t(s, 32, -2.0f, 3.0f), gamma = t(Shape{1, 3, 1, 1}, 33), beta = t(Shape{1, 3, 1, 1}, 34);
  Tensor y = t(s, 35), mean = t(Shape{1, 3, 1, 1}, 36), var = t(Shape{1, 3, 1, 1}, 37);
  cpu_->batch_norm_forward_training(s, 0, x.data(), gamma.data(), beta.data(), eps, y.data(), mean.data(), var.data());
  std::vector<float> mean2(3), var2(3), y2(s.size());
  for (int ch = 0; ch < 3; ++ch) {
    double sum = 0, q = 0;
    for (int64_t j = 0; j < m; ++j) sum += x.data()[k::bn_channel_offset(j, hw, s.c, ch)];
    const double mu = sum / double(m);
    for (int64_t j = 0; j < m; ++j) {
      const double dd = x.data()[k::bn_channel_offset(j, hw, s.c, ch)] - mu;
      q += dd * dd;
    }
    mean2[ch] = float(mu);
    var2[ch] = float(q / double(m));
  }
  expect_close(mean.to_host(), mean2, 1e-5, "batch norm mean");
  expect_close(var.to_host(), var2, 1e-5, "batch norm variance");
  for_all(s.size(), [&](int64_t i) {
    k::bn_apply_at(i, s.c, hw, x.data(), gamma.data(), beta.data(), mean2.data(), var2.data(), eps, y2.data());
  });
  expect_close(y.to_host(), y2, 1e-5, "batch norm forward");

  Tensor dy = t(s, 38), dx = t(s, 39), dgamma = t(Shape{1, 3, 1, 1}, 40), dbeta = t(Shape{1, 3, 1, 1}, 41);
  cpu_->batch_norm_backward(s, 0, x.data(), dy.data(), gamma.data(), mean.data(), var.data(), eps, dx.data(),
                            dgamma.data(), dbeta.data());
  std::vector<float> dgamma2(3), dbeta2(3), dx2(s.size());
  for (int ch = 0; ch < 3; ++ch) {
    const double inv_std = 1.0 / std::sqrt(double(var2[ch]) + eps);
    double sg = 0, sb = 0;
    for (int64_t j = 0; j < m; ++j) {
      double tg = 0, tb = 0;
      k::bn_param_grad_terms(j, hw, s.c, ch, x.data(), dy.data(), mean2[ch], inv_std, tg, tb);
      sg += tg;
      sb += tb;
    }
    dgamma2[ch] = float(sg);
    dbeta2[ch] = float(sb);
  }
  expect_close(dgamma.to_host(), dgamma2, 1e-5, "batch norm dgamma");
  expect_close(dbeta.to_host(), dbeta2, 1e-5, "batch norm dbeta");
  for_all(s.size(), [&](int64_t i) {
    k::bn_data_grad_at(i, s.c, hw, m, x.data(), dy.data(), gamma.data(), mean2.data(), var2.data(), eps,
                       dgamma2.data(), dbeta2.data(), dx2.data());
  });
  expect_close(dx.to_host(), dx2, 1e-4, "batch norm dx");  // cancellation in m dy - dbeta - xhat dgamma
}

// The dense layer's matrix products are cuBLAS; its bias add and bias gradient are kernels.
TEST_F(KernelBodies, DenseBias) {
  const int n = 6, in = 5, out = 4;
  Tensor x = t(Shape{n, in, 1, 1}, 42), w(*cpu_, Shape{out, in, 1, 1}), b = t(Shape{1, out, 1, 1}, 43);
  Tensor y = t(Shape{n, out, 1, 1}, 44);
  cpu_->dense_forward(n, in, out, x.data(), w.data(), b.data(), y.data());  // w = 0: y is the bias alone
  std::vector<float> y2(size_t(n) * out, 0.0f);
  for_all(int64_t(n) * out, [&](int64_t i) { k::add_bias_at(i, out, b.data(), y2.data()); });
  expect_exact(y.to_host(), y2, "dense bias add");
  Tensor dy = t(Shape{n, out, 1, 1}, 45), dw = t(Shape{out, in, 1, 1}, 46), db = t(Shape{1, out, 1, 1}, 47);
  cpu_->dense_backward_weights(n, in, out, x.data(), dy.data(), dw.data(), db.data());
  std::vector<float> db2(out);
  for_all(out, [&](int64_t o) { k::bias_grad_at(o, n, out, dy.data(), db2.data()); });
  expect_close(db.to_host(), db2, 1e-5, "dense bias gradient");
}

// Targets with dry, wet, NaN and masked-out points; mask 0 on some boxes.
struct LossData {
  Shape target{3, 1, 4, 5};
  std::vector<float> y, mask;
  LossData() {
    y = random_values(size_t(target.size()), 48, 0.0f, 20.0f);
    for (size_t i = 0; i < y.size(); i += 3) y[i] = 0.0f;  // dry days
    y[5] = std::numeric_limits<float>::quiet_NaN();
    mask.assign(20, 1.0f);
    mask[2] = mask[11] = 0.0f;
  }
};

TEST_F(KernelBodies, LossSums) {
  const LossData data;
  const int64_t hw = 20, n_hw = data.target.size();
  {
    const Shape os{3, 3, 4, 5};
    auto out = random_values(os.size(), 49, -1.0f, 1.0f);
    for (int64_t i = 0; i < n_hw; ++i) out[(i / hw) * 3 * hw + i % hw] = 0.05f + 0.9f * (out[i] + 1.0f) / 2.0f;  // p
    std::vector<float> d(os.size(), 7.0f), d2(os.size(), 7.0f);
    const double sum = cpu_->bernoulli_gamma_sum(os, out.data(), data.y.data(), data.mask.data(), d.data());
    double sum2 = 0;
    for_all(n_hw, [&](int64_t i) { sum2 += k::bernoulli_gamma_at(i, hw, out.data(), data.y.data(), data.mask.data(), d2.data()); });
    EXPECT_NEAR(sum, sum2, 1e-12 * std::abs(sum)) << "bernoulli-gamma sum";
    expect_exact(d, d2, "bernoulli-gamma gradient");
    double sum3 = 0;  // without a gradient buffer (validation)
    for_all(n_hw, [&](int64_t i) { sum3 += k::bernoulli_gamma_at(i, hw, out.data(), data.y.data(), data.mask.data(), nullptr); });
    EXPECT_EQ(sum2, sum3);
  }
  for (int kind : {k::kSquaredError, k::kGaussian}) {
    const int c = kind == k::kSquaredError ? 1 : 2;
    const Shape os{3, c, 4, 5};
    const auto out = random_values(os.size(), 50, -2.0f, 2.0f);
    std::vector<float> d(os.size(), 7.0f), d2(os.size(), 7.0f);
    const double sum = kind == k::kSquaredError
                           ? cpu_->mse_sum(os, out.data(), data.y.data(), data.mask.data(), d.data())
                           : cpu_->gaussian_nll_sum(os, out.data(), data.y.data(), data.mask.data(), d.data());
    double sum2 = 0;
    for_all(n_hw, [&](int64_t i) {
      sum2 += k::masked_loss_at(kind, i, hw, c, out.data(), data.y.data(), data.mask.data(), d2.data());
    });
    const std::string what = kind == k::kSquaredError ? "squared error" : "gaussian";
    EXPECT_NEAR(sum, sum2, 1e-12 * std::abs(sum)) << what << " sum";
    expect_exact(d, d2, what + " gradient");
  }
}

// The polyphase tests' geometry: x f upsampling of a 2 x 3 x 5 x 4 input, then a k x k 'same'
// convolution to 4 channels.
struct PolyCase {
  int f, k;
};
ConvDesc upsampled_same_conv(int f, int k) {
  return same_conv(Shape{2, 3, 5 * f, 4 * f}, 4, k);
}

// The CUDA backend's polyphase upsample+conv, step by step as it runs them (weight and bias fold,
// the small convolution, the phase interleave; for the gradients the de-interleave, the small
// convolution's backward and the unfold), with the CPU backend's convolutions standing in for
// cuDNN's, against the default path (upsample, then the big 'same' convolution;
// model/upsample_conv_default.cpp) run through the CPU backend. Different summation orders on
// the two sides: relative 1e-5 of each result's scale.
TEST_F(KernelBodies, PolyphaseUpsampleConvMatchesUpsampleThenConv) {
  for (const PolyCase& cs : {PolyCase{2, 8}, PolyCase{2, 3}, PolyCase{2, 4}, PolyCase{3, 5}, PolyCase{3, 2}}) {
    const ConvDesc d = upsampled_same_conv(cs.f, cs.k);
    ASSERT_TRUE(k::polyphase_applies(d, cs.f));
    ConvDesc small;
    const k::Polyphase p = k::make_polyphase(d, cs.f, small);
    const std::string what = "x" + std::to_string(cs.f) + " then " + std::to_string(cs.k) + "x" + std::to_string(cs.k);
    ASSERT_EQ(small.out().h, p.h) << what;
    ASSERT_EQ(small.out().w, p.w) << what;
    const Shape xs{d.in.n, d.in.c, p.h, p.w}, ys = d.out(), ws_shape{small.out_c, d.in.c, small.kh, small.kw};
    Tensor x = t(xs, 51), w = t(Shape{d.out_c, d.in.c, d.kh, d.kw}, 52), b = t(Shape{1, d.out_c, 1, 1}, 53);
    Tensor dy = t(ys, 54);
    Tensor scratch(*cpu_, Shape{int(std::max<int64_t>(1, cpu_->Backend::upsample_conv2d_scratch(d, cs.f))), 1, 1, 1});

    // Forward.
    Tensor y_ref(*cpu_, ys), y(*cpu_, ys), ws(*cpu_, ws_shape), bs(*cpu_, Shape{1, small.out_c, 1, 1});
    Tensor y_small(*cpu_, small.out());
    cpu_->Backend::upsample_conv2d_forward(d, cs.f, x.data(), w.data(), b.data(), y_ref.data(), scratch.data());
    for_all(ws.size(), [&](int64_t i) { k::fold_weights_at(i, p, w.data(), ws.data()); });
    for_all(small.out_c, [&](int64_t i) { k::fold_bias_at(i, cs.f, b.data(), bs.data()); });
    cpu_->conv2d_forward(small, x.data(), ws.data(), bs.data(), y_small.data());
    for_all(ys.size(), [&](int64_t i) { k::phase_interleave_at(i, p, y_small.data(), y.data()); });
    expect_close(y_ref.to_host(), y.to_host(), 1e-5, what + " forward");

    // Backward data.
    Tensor dx_ref(*cpu_, xs), dx(*cpu_, xs), dy_small(*cpu_, small.out());
    cpu_->Backend::upsample_conv2d_backward_data(d, cs.f, dy.data(), w.data(), dx_ref.data(), scratch.data());
    for_all(dy_small.size(), [&](int64_t i) { k::phase_deinterleave_at(i, p, dy.data(), dy_small.data()); });
    cpu_->conv2d_backward_data(small, dy_small.data(), ws.data(), dx.data());
    expect_close(dx_ref.to_host(), dx.to_host(), 1e-5, what + " backward data");

    // Backward weights and bias.
    Tensor dw_ref(*cpu_, w.shape()), db_ref(*cpu_, b.shape()), dw(*cpu_, w.shape()), db(*cpu_, b.shape());
    Tensor dws(*cpu_, ws_shape), dbs(*cpu_, Shape{1, small.out_c, 1, 1});
    cpu_->Backend::upsample_conv2d_backward_weights(d, cs.f, x.data(), dy.data(), dw_ref.data(), db_ref.data(),
                                                    scratch.data());
    cpu_->conv2d_backward_weights(small, x.data(), dy_small.data(), dws.data(), dbs.data());
    for_all(dw.size(), [&](int64_t i) { k::unfold_weight_grads_at(i, p, dws.data(), dw.data()); });
    for_all(d.out_c, [&](int64_t o) { k::unfold_bias_grad_at(o, cs.f, dbs.data(), db.data()); });
    expect_close(dw_ref.to_host(), dw.to_host(), 1e-5, what + " backward weights");
    expect_close(db_ref.to_host(), db.to_host(), 1e-5, what + " backward bias");

    // The interleave and its inverse are each other's adjoint permutations: exact round trip.
    Tensor back(*cpu_, ys);
    for_all(y_small.size(), [&](int64_t i) { k::phase_deinterleave_at(i, p, y.data(), y_small.data()); });
    for_all(ys.size(), [&](int64_t i) { k::phase_interleave_at(i, p, y_small.data(), back.data()); });
    expect_exact(y.to_host(), back.to_host(), what + " interleave round trip");
  }
}

// The CUDA backend's fused forms (upsample_conv2d_relu_forward, upsample_conv2d_backward), in the
// row form its kernels run: the interleave that adds the bias and applies the ReLU, and the
// de-interleave that applies the ReLU's gradient mask, each against today's bodies composed as
// the unfused path ran them (bias
// added on the small grid as cuDNN's AddTensor does, interleave, ReLU; ReLU gradient on the big
// grid, de-interleave): exact, the same float operations on the same values. Then the whole fused
// path as the CUDA backend runs it (one masked de-interleave, both small backward convolutions on
// it, weights folded once) against Backend's default on the CPU backend given the same output y
// (so the masks agree): different summation orders, relative 1e-5 as above.
TEST_F(KernelBodies, PolyphaseBiasReluFusionMatchesComposition) {
  for (const PolyCase& cs : {PolyCase{2, 8}, PolyCase{2, 5}, PolyCase{3, 2}}) {
    const ConvDesc d = upsampled_same_conv(cs.f, cs.k);
    ConvDesc small;
    const k::Polyphase p = k::make_polyphase(d, cs.f, small);
    const std::string what = "x" + std::to_string(cs.f) + " then " + std::to_string(cs.k) + "x" + std::to_string(cs.k);
    const Shape xs{d.in.n, d.in.c, p.h, p.w}, ys = d.out(), ws_shape{small.out_c, d.in.c, small.kh, small.kw};
    const int64_t n_big = ys.size(), n_small = small.out().size();
    ASSERT_EQ(n_big, n_small) << what;  // the same values, in two layouts
    const size_t nb = size_t(n_big), ns = size_t(n_small);
    Tensor x = t(xs, 61), w = t(Shape{d.out_c, d.in.c, d.kh, d.kw}, 62), b = t(Shape{1, d.out_c, 1, 1}, 63);
    Tensor dy = t(ys, 64), ws(*cpu_, ws_shape), bs(*cpu_, Shape{1, small.out_c, 1, 1});
    Tensor y_small(*cpu_, small.out());
    for_all(ws.size(), [&](int64_t i) { k::fold_weights_at(i, p, w.data(), ws.data()); });
    for_all(small.out_c, [&](int64_t i) { k::fold_bias_at(i, cs.f, b.data(), bs.data()); });
    cpu_->conv2d_forward(small, x.data(), ws.data(), nullptr, y_small.data());  // no bias: the fused pass adds it

    // The fused passes as the CUDA kernels run them, a big row at a time.
    const int64_t rows = n_big / (int64_t(cs.f) * p.w);
    const auto for_rows = [&](const auto& f) {
      for (int64_t r = 0; r < rows; ++r) {
        const k::PhaseRow row = k::phase_row(r, p);
        for (int col = 0; col < cs.f * p.w; ++col) f(r, col, row);
      }
    };
    const auto interleave_bias_relu = [&](const float* bias, bool relu, std::vector<float>& out) {
      for_rows([&](int64_t r, int col, const k::PhaseRow& row) {
        k::phase_interleave_bias_relu_row_at(r, col, row, p, y_small.data(), bias, relu, out.data());
      });
    };
    const auto deinterleave_relu_grad = [&](const float* mask, float* out) {
      for_rows([&](int64_t r, int col, const k::PhaseRow& row) {
        k::phase_deinterleave_relu_grad_row_at(r, col, row, p, mask, dy.data(), out);
      });
    };

    // Forward: today's composition, step by step.
    std::vector<float> biased = y_small.to_host(), interleaved(nb), want(nb);
    const int64_t hw = int64_t(p.h) * p.w;
    const std::vector<float> bsv = bs.to_host();
    for (int64_t i = 0; i < n_small; ++i) biased[size_t(i)] = biased[size_t(i)] + bsv[size_t(i / hw % small.out_c)];
    for_all(n_big, [&](int64_t i) { k::phase_interleave_at(i, p, biased.data(), interleaved.data()); });
    for_all(n_big, [&](int64_t i) { k::relu_forward_at(i, interleaved.data(), want.data()); });
    // NaN-filled outputs: an element the row form never writes fails the comparison.
    std::vector<float> got(nb, std::nanf("")), got_lin(nb, std::nanf("")), got_nobias(nb, std::nanf("")), plain(nb);
    interleave_bias_relu(b.data(), true, got);
    expect_exact(want, got, what + " interleave+bias+relu");
    interleave_bias_relu(b.data(), false, got_lin);
    expect_exact(interleaved, got_lin, what + " interleave+bias");
    interleave_bias_relu(nullptr, false, got_nobias);
    for_all(n_big, [&](int64_t i) { k::phase_interleave_at(i, p, y_small.data(), plain.data()); });
    expect_exact(plain, got_nobias, what + " interleave, no bias");
    int cut = 0;
    for (float v : got) cut += v == 0.0f;
    EXPECT_GT(cut, 0) << what;
    EXPECT_LT(cut, n_big) << what;
    // And what it all computes: Backend's default (upsample, big convolution, ReLU).
    Tensor scratch(*cpu_, Shape{int(cpu_->Backend::upsample_conv2d_scratch(d, cs.f) + n_big), 1, 1, 1});
    Tensor y_ref(*cpu_, ys);
    cpu_->Backend::upsample_conv2d_forward(d, cs.f, x.data(), w.data(), b.data(), y_ref.data(), scratch.data());
    cpu_->relu_forward(n_big, y_ref.data(), y_ref.data());
    expect_close(y_ref.to_host(), got, 1e-5, what + " fused forward");

    // Backward: ReLU gradient on the big grid then de-interleave, against the one masked pass.
    std::vector<float> masked(nb), dys_want(ns), dys_plain(ns);
    for_all(n_big, [&](int64_t i) { k::relu_backward_at(i, got.data(), dy.data(), masked.data()); });
    for_all(n_small, [&](int64_t i) { k::phase_deinterleave_at(i, p, masked.data(), dys_want.data()); });
    Tensor dys(*cpu_, small.out());
    dys.upload(std::vector<float>(ns, std::nanf("")).data());
    std::vector<float> dys_lin(ns, std::nanf(""));
    deinterleave_relu_grad(got.data(), dys.data());
    expect_exact(dys_want, dys.to_host(), what + " masked de-interleave");
    deinterleave_relu_grad(nullptr, dys_lin.data());
    for_all(n_small, [&](int64_t i) { k::phase_deinterleave_at(i, p, dy.data(), dys_plain.data()); });
    expect_exact(dys_plain, dys_lin, what + " de-interleave without ReLU");

    // The 16-bit forms (fused casts): the interleave from the rounded small output is the widening
    // then the FP32 row body; the de-interleave's two outputs are the FP32 row body's and its
    // rounding. Bit for bit.
    for (k::Half16 h16 : {k::Half16::kBf16, k::Half16::kFp16}) {
      const std::string hw16 = what + (h16 == k::Half16::kBf16 ? " bf16" : " fp16");
      const std::vector<float> ysmall = y_small.to_host();
      std::vector<uint16_t> ysh(ns);
      std::vector<float> widened(ns), want16(nb, std::nanf("")), got16(nb, std::nanf(""));
      for (int64_t i = 0; i < n_small; ++i) ysh[size_t(i)] = k::to_half16(h16, ysmall[size_t(i)]);
      for (int64_t i = 0; i < n_small; ++i) widened[size_t(i)] = k::from_half16(h16, ysh[size_t(i)]);
      for_rows([&](int64_t r, int col, const k::PhaseRow& row) {
        k::phase_interleave_bias_relu_row_at(r, col, row, p, widened.data(), b.data(), true, want16.data());
        k::phase_interleave_half16_bias_relu_row_at(r, col, row, p, h16, ysh.data(), b.data(), true, got16.data());
      });
      expect_exact(want16, got16, hw16 + " interleave from 16 bits");
      std::vector<float> dys16(ns, std::nanf(""));
      std::vector<uint16_t> dysh(ns, 0xffffu);
      for_rows([&](int64_t r, int col, const k::PhaseRow& row) {
        k::phase_deinterleave_relu_grad_half16_row_at(r, col, row, p, h16, got.data(), dy.data(), dys16.data(),
                                                      dysh.data());
      });
      expect_exact(dys_want, dys16, hw16 + " masked de-interleave, FP32 copy");
      int wrong = 0;
      for (int64_t i = 0; i < n_small; ++i) wrong += dysh[size_t(i)] != k::to_half16(h16, dys_want[size_t(i)]);
      EXPECT_EQ(wrong, 0) << hw16 << " masked de-interleave, 16-bit copy";

      // 16-bit activations (DOWNSCALE_CUDA_ACTIVATIONS16): the interleave writing a 16-bit big
      // output is the FP32 one rounded; the de-interleave masking from a 16-bit y is the FP32 one
      // given the widened y.
      std::vector<uint16_t> big16(nb, 0xffffu);
      for_rows([&](int64_t r, int col, const k::PhaseRow& row) {
        k::phase_interleave_half16_bias_relu_row_at(r, col, row, p, h16, ysh.data(), b.data(), true, big16.data());
      });
      wrong = 0;
      for (int64_t i = 0; i < int64_t(nb); ++i) wrong += big16[size_t(i)] != k::to_half16(h16, want16[size_t(i)]);
      EXPECT_EQ(wrong, 0) << hw16 << " interleave into a 16-bit activation";
      // From an FP32 small output (a narrow small convolution) into a 16-bit activation.
      std::vector<uint16_t> big16f(nb, 0xffffu);
      for_rows([&](int64_t r, int col, const k::PhaseRow& row) {
        k::phase_interleave_bias_relu_row_at(r, col, row, p, widened.data(), b.data(), true, h16, big16f.data());
      });
      EXPECT_EQ(big16f, big16) << hw16 << " interleave of an FP32 small output into a 16-bit activation";
      std::vector<float> big16_wide(nb), dys_m16(ns, std::nanf("")), dys_mw(ns, std::nanf(""));
      std::vector<uint16_t> dysh_m16(ns, 0xffffu), dysh_mw(ns, 0xffffu);
      for (size_t i = 0; i < nb; ++i) big16_wide[i] = k::from_half16(h16, big16[i]);
      for_rows([&](int64_t r, int col, const k::PhaseRow& row) {
        k::phase_deinterleave_relu_grad_half16_row_at(r, col, row, p, h16, big16.data(), dy.data(), dys_m16.data(),
                                                      dysh_m16.data());
        k::phase_deinterleave_relu_grad_half16_row_at(r, col, row, p, h16, big16_wide.data(), dy.data(),
                                                      dys_mw.data(), dysh_mw.data());
      });
      expect_exact(dys_mw, dys_m16, hw16 + " de-interleave masked by a 16-bit y");
      EXPECT_EQ(dysh_mw, dysh_m16) << hw16 << " de-interleave masked by a 16-bit y, 16-bit copy";
    }

    // The CUDA backend's fused backward on that one dys, against Backend's default given the same y.
    Tensor dws(*cpu_, ws_shape), dbs(*cpu_, Shape{1, small.out_c, 1, 1}), dx(*cpu_, xs), dw(*cpu_, w.shape()),
        db(*cpu_, b.shape());
    cpu_->conv2d_backward_weights(small, x.data(), dys.data(), dws.data(), dbs.data());
    for_all(dw.size(), [&](int64_t i) { k::unfold_weight_grads_at(i, p, dws.data(), dw.data()); });
    for_all(d.out_c, [&](int64_t o) { k::unfold_bias_grad_at(o, cs.f, dbs.data(), db.data()); });
    cpu_->conv2d_backward_data(small, dys.data(), ws.data(), dx.data());
    Tensor y_used = t(ys, got), dx_ref(*cpu_, xs), dw_ref(*cpu_, w.shape()), db_ref(*cpu_, b.shape());
    cpu_->Backend::upsample_conv2d_backward(d, cs.f, x.data(), y_used.data(), dy.data(), w.data(), dx_ref.data(),
                                            dw_ref.data(), db_ref.data(), scratch.data());
    expect_close(dx_ref.to_host(), dx.to_host(), 1e-5, what + " fused backward data");
    expect_close(dw_ref.to_host(), dw.to_host(), 1e-5, what + " fused backward weights");
    expect_close(db_ref.to_host(), db.to_host(), 1e-5, what + " fused backward bias");
  }
}

// The 16-bit wire forms of compressed allreduce (train.allreduce_dtype): every 16-bit value comes
// back exactly; a float goes to the nearest 16-bit value, ties to the even one (checked against
// its two neighbours, and for IEEE half against the compiler's own _Float16 conversion); the
// MPI user sum is the FP32 sum rounded once.
TEST_F(KernelBodies, Wire16) {
  using k::Wire16;
  for (Wire16 w : {Wire16::kBf16, Wire16::kFp16}) {
    const char* name = w == Wire16::kBf16 ? "bf16" : "fp16";
    for (uint32_t h = 0; h < 65536; ++h) {
      const float f = k::from_wire16(w, uint16_t(h));
      if (std::isnan(f)) {
        EXPECT_TRUE(std::isnan(k::from_wire16(w, k::to_wire16(w, f)))) << name << " NaN " << h;
        continue;
      }
      ASSERT_EQ(k::to_wire16(w, f), uint16_t(h)) << name << " round trip of " << h;
    }
    const auto values = random_values(200000, w == Wire16::kBf16 ? 5 : 6, -1.0f, 1.0f);
    for (size_t i = 0; i < values.size(); ++i) {
      // Magnitudes from 2^-30 to 2^18: subnormal halves, normal ones, overflow.
      const float f = values[i] * std::ldexp(1.0f, int(i % 48) - 30);
      const uint16_t h = k::to_wire16(w, f);
      const float g = k::from_wire16(w, h);
      if (std::isinf(g)) {
        ASSERT_EQ(w, Wire16::kFp16) << f;
        ASSERT_GE(std::abs(f), 65520.0f) << name << " " << f;
        continue;
      }
      const double err = std::abs(double(f) - g);
      for (int step : {-1, 1}) {
        const float n = k::from_wire16(w, uint16_t(h + step));
        if (std::isnan(n) || std::isinf(n) || (h & 0x7fff) == 0) continue;
        const double nerr = std::abs(double(f) - n);
        ASSERT_TRUE(err < nerr || (err == nerr && (h & 1) == 0)) << name << " " << f << " -> " << g << ", " << n << " is nearer";
      }
#if defined(__FLT16_MAX__)
      if (w == Wire16::kFp16) {
        const _Float16 ref = static_cast<_Float16>(f);
        uint16_t rb;
        std::memcpy(&rb, &ref, 2);
        ASSERT_EQ(h, rb) << "fp16 of " << f;
      }
#endif
    }
    // The user sum of the MPI path.
    const auto a = random_values(1000, 7, -4.0f, 4.0f), b = random_values(1000, 8, -4.0f, 4.0f);
    std::vector<uint16_t> ha(a.size()), hb(b.size());
    for_all(int64_t(a.size()), [&](int64_t i) { k::pack_wire16_at(i, w, a.data(), ha.data()); });
    for_all(int64_t(b.size()), [&](int64_t i) { k::pack_wire16_at(i, w, b.data(), hb.data()); });
    const auto hb0 = hb;
    for_all(int64_t(a.size()), [&](int64_t i) { k::sum_wire16_at(i, w, ha.data(), hb.data()); });
    std::vector<float> back(a.size());
    for_all(int64_t(a.size()), [&](int64_t i) { k::unpack_wire16_at(i, w, hb.data(), back.data()); });
    for (size_t i = 0; i < a.size(); ++i) {
      const float want = k::from_wire16(w, ha[i]) + k::from_wire16(w, hb0[i]);
      ASSERT_EQ(back[i], k::from_wire16(w, k::to_wire16(w, want))) << name << " sum " << i;
      // Within 16-bit rounding of the exact FP32 sum: 2^-8 relative (bf16), 2^-11 (fp16), per rounding.
      const double rel = w == Wire16::kBf16 ? 3 * std::ldexp(1.0, -8) : 3 * std::ldexp(1.0, -11);
      ASSERT_LE(std::abs(double(back[i]) - (double(a[i]) + b[i])), rel * (std::abs(a[i]) + std::abs(b[i])) + 1e-30);
    }
  }
  // Fixed points: ties to even, the largest half, the smallest subnormal.
  EXPECT_EQ(k::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(k::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(k::float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(k::float_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(k::float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(k::float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(k::float_to_fp16(-3 * std::ldexp(1.0f, -25)), 0x8002);
}

// The row gather of batches from a split in backend memory: the CPU backend's (the default,
// row by row) and the body must pick the very same rows.
TEST_F(KernelBodies, GatherRows) {
  const int64_t rows = 7, row_size = 13;
  Tensor src = t(Shape{1, 1, int(rows), int(row_size)}, 1);
  Tensor index = t(Shape{1, 1, 1, 4}, std::vector<float>{6, 0, 3, 3});
  Tensor want(*cpu_, Shape{1, 1, 4, int(row_size)});
  std::vector<float> got(size_t(4 * row_size));
  cpu_->gather_rows(4, row_size, index.data(), src.data(), want.data());
  for_all(4 * row_size, [&](int64_t i) { k::gather_row_at(i, row_size, index.data(), src.data(), got.data()); });
  expect_exact(want.to_host(), got, "gather_rows");
  const auto s = src.to_host();
  EXPECT_EQ(got[0], s[size_t(6 * row_size)]);
  EXPECT_EQ(got[size_t(row_size) + 5], s[5]);
}

// The epoch's loss accumulator: the mean of each step times its rows, as the host's double sum
// did, and the first non-finite step recorded once.
TEST_F(KernelBodies, AccumulateMeanLoss) {
  double acc[2] = {1.5, -1};
  k::accumulate_mean_loss(10.0, 4, 16, 0, acc);
  EXPECT_EQ(acc[0], 1.5 + (10.0 / 4) * 16);
  EXPECT_EQ(acc[1], -1);
  k::accumulate_mean_loss(3.0, 0, 16, 1, acc);  // no valid point: adds 0
  EXPECT_EQ(acc[0], 1.5 + (10.0 / 4) * 16);
  k::accumulate_mean_loss(std::numeric_limits<double>::infinity(), 3, 16, 2, acc);
  EXPECT_EQ(acc[1], 2);
  k::accumulate_mean_loss(std::nan(""), 3, 16, 3, acc);
  EXPECT_EQ(acc[1], 2);  // the first stays
  EXPECT_TRUE(std::isnan(acc[0]));
}

}  // namespace
}  // namespace ds::model
