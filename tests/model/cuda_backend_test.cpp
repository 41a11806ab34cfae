// The CUDA backend against the CPU backend, op by op, on random data. Skipped without a GPU (the
// build still compiles and links the CUDA backend wherever the toolkit is installed).
//
// Tolerances: elementwise ops compute the same float expressions (exp, sqrt may differ by an ulp
// or two): relative 1e-4. Convolutions sum in a different order on each side, over up to a few
// thousand products: relative 1e-3 of the output's scale. TF32 is off (set_math(kFp32):
// CUDNN_FMA_MATH, CUBLAS_DEFAULT_MATH); with it on, errors would be ~1e-3 relative per product and
// this test would catch it (ModelCuda.Tf32ConvolutionsStayWithinTf32Tolerance checks that mode).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "conv_reference.h"
#include "support/stderr_capture.h"
#include "model/adam.h"
#include "model/loss_accumulator.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/optimizer.h"
#include "model/layers/add.h"
#include "model/layers/batch_norm.h"
#include "model/layers/global_average_pool.h"
#include "model/sgd.h"
#include "model/loss.h"
#include "model/math_mode.h"
#include "model/net.h"
#include "model_test_util.h"
#include "support/scoped_env.h"

namespace ds::model {
namespace {

using ds::test::ScopedEnv;
using ds::test::ScopedEnvs;

using test::random_values;
using test::same_conv;

class ModelCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) {
      // On the GPU machine (scripts/gpu_check.sh) a skip would hide a broken install.
      const char* require = std::getenv("DOWNSCALE_REQUIRE_GPU");
      if (require && std::string(require) == "1") FAIL() << "DOWNSCALE_REQUIRE_GPU=1 but " << cuda_probe().reason;
      GTEST_SKIP() << "no GPU (" << cuda_probe().reason << "): CUDA backend tests skipped";
    }
    cpu_ = make_cpu_backend(0);
    gpu_ = make_cuda_backend(0);
    // Parity pins FP32: under TF32 (train.precision's default) convolutions differ by ~1e-3 relative.
    ASSERT_TRUE(gpu_->set_math(MathMode::kFp32));
  }

  // The same host data on both backends.
  struct Pair {
    Tensor cpu, gpu;
  };
  Pair pair(Shape s, const std::vector<float>& v) {
    Pair p{Tensor(*cpu_, s), Tensor(*gpu_, s)};
    p.cpu.upload(v.data());
    p.gpu.upload(v.data());
    return p;
  }
  Pair random_pair(Shape s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    return pair(s, random_values(size_t(s.size()), seed, lo, hi));
  }

  static void expect_close(const Pair& p, double rel, const std::string& what) {
    const auto a = p.cpu.to_host(), b = p.gpu.to_host();
    ASSERT_EQ(a.size(), b.size());
    double scale = 1e-6;
    for (float v : a) scale = std::max(scale, double(std::abs(v)));
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i)
      if (!(std::abs(double(a[i]) - b[i]) <= rel * std::max(scale * 0.1, double(std::abs(a[i])))) && ++bad <= 5)
        ADD_FAILURE() << what << "[" << i << "]: cpu " << a[i] << " gpu " << b[i];
    EXPECT_EQ(bad, 0) << what;
  }

  // A whole network built from `spec` on both backends from the same seed: its output on the
  // same random input of `in`, and every parameter's gradient of the same random output gradient.
  void expect_net_matches_cpu(const ModelSpec& spec, Shape in, double rel, const std::string& what) {
    Net nc(spec, *cpu_), ng(spec, *gpu_);
    nc.init(1);
    ng.init(1);
    Pair x = random_pair(in, 2);
    const Shape os = nc.output_shape(in.n);
    Pair out{Tensor(*cpu_, os), Tensor(*gpu_, os)};
    cpu_->copy(out.cpu.data(), nc.forward(x.cpu).data(), out.cpu.size());
    gpu_->copy(out.gpu.data(), ng.forward(x.gpu).data(), out.gpu.size());
    expect_close(out, rel, what + " forward");
    Pair d = random_pair(os, 3);
    nc.backward(d.cpu);
    ng.backward(d.gpu);
    auto pc = nc.params(), pg = ng.params();
    for (size_t i = 0; i < pc.size(); ++i) {
      Pair g{Tensor(*cpu_, pc[i].grad->shape()), Tensor(*gpu_, pg[i].grad->shape())};
      cpu_->copy(g.cpu.data(), pc[i].grad->data(), g.cpu.size());
      gpu_->copy(g.gpu.data(), pg[i].grad->data(), g.gpu.size());
      expect_close(g, rel, what + " grad " + pc[i].name);
    }
  }

  // Pooling forward and backward on both backends from the same random input and gradient.
  // Selecting or averaging the same floats (random data: no ties): 1e-5.
  void expect_pool_matches_cpu(const PoolDesc& d, const std::string& what) {
    Pair x = random_pair(d.in, 1), y = random_pair(d.out(), 2), dy = random_pair(d.out(), 3),
         dx = random_pair(d.in, 4);
    cpu_->pool2d_forward(d, x.cpu.data(), y.cpu.data());
    gpu_->pool2d_forward(d, x.gpu.data(), y.gpu.data());
    expect_close(y, 1e-5, what + " forward");
    cpu_->pool2d_backward(d, x.cpu.data(), dy.cpu.data(), dx.cpu.data());
    gpu_->pool2d_backward(d, x.gpu.data(), dy.gpu.data(), dx.gpu.data());
    expect_close(dx, 1e-5, what + " backward");
  }

  std::unique_ptr<Backend> cpu_, gpu_;
};

TEST_F(ModelCuda, MemoryFillCopy) {
  Pair a = random_pair(Shape{2, 3, 4, 5}, 1);
  expect_close(a, 0, "upload/download");
  Pair b = random_pair(Shape{2, 3, 4, 5}, 2);
  cpu_->copy(b.cpu.data(), a.cpu.data(), a.cpu.size());
  gpu_->copy(b.gpu.data(), a.gpu.data(), a.gpu.size());
  expect_close(b, 0, "copy");
  cpu_->fill(b.cpu.data(), b.cpu.size(), 2.5f);
  gpu_->fill(b.gpu.data(), b.gpu.size(), 2.5f);
  expect_close(b, 0, "fill");
}

TEST_F(ModelCuda, Convolutions) {
  struct Case {
    int c, h, w, oc, kh, kw, pt, pb, pl, pr;
  };
  for (const Case& k : {Case{3, 9, 11, 5, 3, 3, 1, 1, 1, 1}, Case{4, 8, 7, 6, 2, 2, 0, 1, 0, 1},
                        Case{5, 12, 10, 4, 8, 8, 3, 4, 3, 4}, Case{6, 9, 9, 3, 4, 4, 0, 0, 0, 0},
                        Case{20, 15, 26, 50, 9, 9, 4, 4, 4, 4},
                        // 7,000-pixel planes: the bias gradient's two chunks (model/kernels/bias_grad.h)
                        Case{2, 70, 100, 6, 3, 3, 1, 1, 1, 1}}) {
    ConvDesc d;
    d.in = Shape{3, k.c, k.h, k.w};
    d.out_c = k.oc;
    d.kh = k.kh;
    d.kw = k.kw;
    d.pad_top = k.pt;
    d.pad_bottom = k.pb;
    d.pad_left = k.pl;
    d.pad_right = k.pr;
    const Shape o = d.out();
    const std::string what = "conv " + std::to_string(k.kh) + "x" + std::to_string(k.kw) + " pads " +
                             std::to_string(k.pt) + std::to_string(k.pb);
    Pair x = random_pair(d.in, 1), w = random_pair(Shape{k.oc, k.c, k.kh, k.kw}, 2), b = random_pair(Shape{1, k.oc, 1, 1}, 3);
    Pair y = random_pair(o, 4), dy = random_pair(o, 5), dx = random_pair(d.in, 6);
    Pair dw = random_pair(w.cpu.shape(), 7), db = random_pair(b.cpu.shape(), 8);
    for (int rep = 0; rep < 2; ++rep) {  // the second run uses the cached plan
      cpu_->conv2d_forward(d, x.cpu.data(), w.cpu.data(), b.cpu.data(), y.cpu.data());
      gpu_->conv2d_forward(d, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data());
      expect_close(y, 1e-3, what + " forward");
      cpu_->conv2d_backward_data(d, dy.cpu.data(), w.cpu.data(), dx.cpu.data());
      gpu_->conv2d_backward_data(d, dy.gpu.data(), w.gpu.data(), dx.gpu.data());
      expect_close(dx, 1e-3, what + " backward data");
      cpu_->conv2d_backward_weights(d, x.cpu.data(), dy.cpu.data(), dw.cpu.data(), db.cpu.data());
      gpu_->conv2d_backward_weights(d, x.gpu.data(), dy.gpu.data(), dw.gpu.data(), db.gpu.data());
      expect_close(dw, 1e-3, what + " backward weights");
      expect_close(db, 1e-3, what + " backward bias");
    }
  }
}

// A pass's algorithm that cuDNN refuses when training calls it (a BAD_PARAM at run time, as a BF16
// 9x9 forward got on an H100) is replaced by the next of that pass's ranked list, with one stderr
// line, and the result is still right. DOWNSCALE_CUDA_TEST_REFUSE=1 refuses each plan's first call
// of each pass, so this runs the fallback on any GPU. Tolerance as ModelCuda.Convolutions.
TEST_F(ModelCuda, RefusedAlgorithmIsReplacedByTheNext) {
  // cuDNN's filter pass must run outside timing for its refusal to show: the weight gradient by
  // GEMM, when its timing won, would take it instead (the timing runs are never refused).
  ScopedEnv cudnn_filter("DOWNSCALE_CUDA_WGRAD_GEMM", "0");
  std::unique_ptr<Backend> gpu;
  {
    ScopedEnv refuse("DOWNSCALE_CUDA_TEST_REFUSE", "1");
    gpu = make_cuda_backend(0);
  }
  ASSERT_TRUE(gpu->set_math(MathMode::kFp32));
  ConvDesc d;  // 5 output channels: cuDNN's path, not the narrow kernels (out_c <= 4)
  d.in = Shape{3, 4, 9, 11};
  d.out_c = 5;
  d.kh = d.kw = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  const Shape ws{5, 4, 3, 3}, bs{1, 5, 1, 1}, o = d.out();
  auto both = [&](Shape s, uint64_t seed) {
    const auto v = random_values(size_t(s.size()), seed, -1.0f, 1.0f);
    Pair p{Tensor(*cpu_, s), Tensor(*gpu, s)};
    p.cpu.upload(v.data());
    p.gpu.upload(v.data());
    return p;
  };
  Pair x = both(d.in, 1), w = both(ws, 2), b = both(bs, 3), y = both(o, 4), dy = both(o, 5), dx = both(d.in, 6);
  Pair dw = both(ws, 7), db = both(bs, 8);
  testing::internal::CaptureStderr();
  cpu_->conv2d_forward(d, x.cpu.data(), w.cpu.data(), b.cpu.data(), y.cpu.data());
  gpu->conv2d_forward(d, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data());
  cpu_->conv2d_backward_data(d, dy.cpu.data(), w.cpu.data(), dx.cpu.data());
  gpu->conv2d_backward_data(d, dy.gpu.data(), w.gpu.data(), dx.gpu.data());
  cpu_->conv2d_backward_weights(d, x.cpu.data(), dy.cpu.data(), dw.cpu.data(), db.cpu.data());
  gpu->conv2d_backward_weights(d, x.gpu.data(), dy.gpu.data(), dw.gpu.data(), db.gpu.data());
  const std::string err = testing::internal::GetCapturedStderr();
  expect_close(y, 1e-3, "forward after a refusal");
  expect_close(dx, 1e-3, "backward data after a refusal");
  expect_close(dw, 1e-3, "backward weights after a refusal");
  expect_close(db, 1e-3, "backward bias after a refusal");
  for (const char* pass : {"forward algorithm", "backward data algorithm", "backward filter algorithm"})
    EXPECT_NE(err.find(std::string(pass)), std::string::npos) << "no refusal line for the " << pass << ":\n" << err;
  EXPECT_NE(err.find("refused: "), std::string::npos) << err;
}

TEST_F(ModelCuda, ElementwiseOps) {
  const Shape s{3, 4, 5, 7};
  const int64_t n = s.size();
  Pair x = random_pair(s, 1, -3.0f, 3.0f), dy = random_pair(s, 2), y = random_pair(s, 3), dx = random_pair(s, 4);
  cpu_->relu_forward(n, x.cpu.data(), y.cpu.data());
  gpu_->relu_forward(n, x.gpu.data(), y.gpu.data());
  expect_close(y, 1e-4, "relu forward");
  cpu_->relu_backward(n, x.cpu.data(), dy.cpu.data(), dx.cpu.data());
  gpu_->relu_backward(n, x.gpu.data(), dy.gpu.data(), dx.gpu.data());
  expect_close(dx, 1e-4, "relu backward");

  cpu_->sigmoid_channel_forward(s, 2, x.cpu.data());
  gpu_->sigmoid_channel_forward(s, 2, x.gpu.data());
  expect_close(x, 1e-4, "sigmoid forward");
  cpu_->sigmoid_channel_backward(s, 2, x.cpu.data(), dy.cpu.data());
  gpu_->sigmoid_channel_backward(s, 2, x.gpu.data(), dy.gpu.data());
  expect_close(dy, 1e-4, "sigmoid backward");

  cpu_->accumulate(n, x.cpu.data(), dy.cpu.data());
  gpu_->accumulate(n, x.gpu.data(), dy.gpu.data());
  expect_close(dy, 1e-4, "accumulate");
  cpu_->scale(n, -0.37f, dy.cpu.data());
  gpu_->scale(n, -0.37f, dy.gpu.data());
  expect_close(dy, 1e-4, "scale");
}

TEST_F(ModelCuda, UpsampleAndChannels) {
  const Shape in{2, 3, 5, 7};
  for (int f : {2, 3}) {
    const Shape out{2, 3, 5 * f, 7 * f};
    Pair x = random_pair(in, 1), y = random_pair(out, 2), dy = random_pair(out, 3), dx = random_pair(in, 4);
    cpu_->upsample_nearest_forward(in, f, x.cpu.data(), y.cpu.data());
    gpu_->upsample_nearest_forward(in, f, x.gpu.data(), y.gpu.data());
    expect_close(y, 1e-4, "upsample forward");
    cpu_->upsample_nearest_backward(in, f, dy.cpu.data(), dx.cpu.data());
    gpu_->upsample_nearest_backward(in, f, dy.gpu.data(), dx.gpu.data());
    expect_close(dx, 1e-4, "upsample backward");
  }
  const Shape part{2, 3, 4, 5}, whole{2, 7, 4, 5};
  Pair a = random_pair(part, 5), cat = random_pair(whole, 6), back = random_pair(part, 7);
  cpu_->copy_channels(part, a.cpu.data(), whole, 2, cat.cpu.data());
  gpu_->copy_channels(part, a.gpu.data(), whole, 2, cat.gpu.data());
  expect_close(cat, 0, "copy_channels");
  cpu_->slice_channels(part, 4, whole, cat.cpu.data(), back.cpu.data());
  gpu_->slice_channels(part, 4, whole, cat.gpu.data(), back.gpu.data());
  expect_close(back, 0, "slice_channels");
}

TEST_F(ModelCuda, BernoulliGammaLoss) {
  const Shape s{3, 3, 6, 7};
  auto out = random_values(size_t(s.size()), 1, -1.0f, 1.0f);
  for (int n = 0; n < 3; ++n)
    for (int i = 0; i < 42; ++i) out[size_t(n * 126 + i)] = 0.5f + 0.45f * out[size_t(n * 126 + i)];  // p
  auto y = random_values(3 * 42, 2, 0.0f, 5.0f);
  for (size_t i = 0; i < y.size(); i += 3) y[i] = 0.0f;
  std::vector<float> mask(42, 1.0f);
  for (size_t i = 0; i < 42; i += 4) {
    mask[i] = 0.0f;
    y[i] = std::nanf("");  // masked NaN targets must be ignored on the GPU too
  }
  Pair o = pair(s, out), t = pair(Shape{3, 1, 6, 7}, y), m = pair(Shape{1, 1, 6, 7}, mask);
  Pair d = random_pair(s, 3);
  const double lc = bernoulli_gamma_loss(*cpu_, o.cpu, t.cpu, m.cpu, &d.cpu);
  const double lg = bernoulli_gamma_loss(*gpu_, o.gpu, t.gpu, m.gpu, &d.gpu);
  EXPECT_NEAR(lg, lc, 1e-9 * std::abs(lc));  // both sum double terms; only the order differs
  expect_close(d, 1e-4, "loss gradient");
}

TEST_F(ModelCuda, AdamUpdate) {
  const Shape s{1, 1, 10, 10};
  Pair w = random_pair(s, 1), g = random_pair(s, 2);
  Adam ac({{"w", &w.cpu, &g.cpu}}, *cpu_), ag({{"w", &w.gpu, &g.gpu}}, *gpu_);
  for (int i = 0; i < 3; ++i) {
    ac.step(1e-2);
    ag.step(1e-2);
  }
  expect_close(w, 1e-4, "adam weights");
}

// adam_update_many (Adam::step's one launch, cuda_kernels.cu): each tensor exactly as
// adam_update makes it, over tensors of one, several and no chunks; the same list again (no
// upload), a shorter one, the first back, and the same count in another order (other pointers
// at each place: a new list).
TEST_F(ModelCuda, AdamUpdateManyIsAdamUpdatePerTensor) {
  const std::vector<int64_t> sizes = {100, 0, 2 * kernels::kAdamChunk + 5, 7};
  std::vector<std::array<Tensor, 8>> t;  // w, g, m, v for the many, then for the single updates
  for (size_t k = 0; k < sizes.size(); ++k) {
    const Shape sh{1, 1, 1, int(sizes[k])};
    t.push_back({Tensor(*gpu_, sh), Tensor(*gpu_, sh), Tensor(*gpu_, sh), Tensor(*gpu_, sh), Tensor(*gpu_, sh),
                 Tensor(*gpu_, sh), Tensor(*gpu_, sh), Tensor(*gpu_, sh)});
    for (int j = 0; j < 4; ++j) {
      const auto vals = random_values(size_t(sizes[k]), 10 * int(k) + j, j == 3 ? 0.0f : -1.0f, 1.0f);
      if (sizes[k] == 0) continue;
      t[k][size_t(j)].upload(vals.data());
      t[k][size_t(j + 4)].upload(vals.data());
    }
  }
  const auto list = [&](size_t from, size_t to, bool reversed) {
    std::vector<Backend::AdamSpan> spans;
    for (size_t k = from; k < to; ++k)
      spans.push_back({t[k][0].data(), t[k][1].data(), t[k][2].data(), t[k][3].data(), sizes[k]});
    if (reversed) std::reverse(spans.begin(), spans.end());
    return spans;
  };
  struct Call {
    size_t from, to;
    bool reversed;
  };
  for (const Call& c : {Call{0, 4, false}, Call{0, 4, false}, Call{2, 4, false}, Call{0, 4, false}, Call{0, 4, true}}) {
    const auto [from, to, reversed] = c;
    gpu_->adam_update_many(list(from, to, reversed), 1e-3f, 0.9f, 0.999f, 1e-7f);
    for (size_t k = from; k < to; ++k)
      gpu_->adam_update(sizes[k], t[k][4].data(), t[k][5].data(), t[k][6].data(), t[k][7].data(), 1e-3f, 0.9f, 0.999f,
                        1e-7f);
  }
  for (size_t k = 0; k < sizes.size(); ++k)
    for (int j : {0, 2, 3})
      EXPECT_EQ(t[k][size_t(j)].to_host(), t[k][size_t(j + 4)].to_host()) << "tensor " << k << " part " << j;
}

// The whole demo network, forward and backward, on both backends.
TEST_F(ModelCuda, DemoNetMatchesCpu) {
  ModelSpec spec;
  spec.in_channels = 4;
  spec.in_h = 6;
  spec.in_w = 8;
  spec.filters = {8, 8, 8};
  expect_net_matches_cpu(spec, Shape{2, 4, 6, 8}, 1e-3, "demo");
}

// --- the ops added with DeepESD, batch norm, pooling, dropout, Gaussian/MSE and SGD ---

// Dense: cuBLAS sums in another order than oneDNN over `in` = 300 products: 1e-3 as the convs.
TEST_F(ModelCuda, Dense) {
  const int n = 5, in = 300, out = 70;
  Pair x = random_pair(Shape{n, in, 1, 1}, 1), w = random_pair(Shape{out, in, 1, 1}, 2),
       b = random_pair(Shape{1, out, 1, 1}, 3), y = random_pair(Shape{n, out, 1, 1}, 4),
       dy = random_pair(Shape{n, out, 1, 1}, 5), dx = random_pair(Shape{n, in, 1, 1}, 6),
       dw = random_pair(w.cpu.shape(), 7), db = random_pair(b.cpu.shape(), 8);
  cpu_->dense_forward(n, in, out, x.cpu.data(), w.cpu.data(), b.cpu.data(), y.cpu.data());
  gpu_->dense_forward(n, in, out, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data());
  expect_close(y, 1e-3, "dense forward");
  cpu_->dense_backward_data(n, in, out, dy.cpu.data(), w.cpu.data(), dx.cpu.data());
  gpu_->dense_backward_data(n, in, out, dy.gpu.data(), w.gpu.data(), dx.gpu.data());
  expect_close(dx, 1e-3, "dense backward data");
  cpu_->dense_backward_weights(n, in, out, x.cpu.data(), dy.cpu.data(), dw.cpu.data(), db.cpu.data());
  gpu_->dense_backward_weights(n, in, out, x.gpu.data(), dy.gpu.data(), dw.gpu.data(), db.gpu.data());
  expect_close(dw, 1e-3, "dense backward weights");
  expect_close(db, 1e-4, "dense backward bias");
}

// Pooling selects or averages the same floats on both sides (random data: no ties): 1e-5.
TEST_F(ModelCuda, Pooling) {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAverage})
    for (auto [k, stride] : {std::pair{2, 2}, std::pair{3, 1}, std::pair{2, 3}}) {
      PoolDesc d;
      d.in = Shape{2, 3, 9, 10};
      d.k = k;
      d.stride = stride;
      d.kind = kind;
      const std::string what = std::string(kind == PoolKind::kMax ? "max" : "avg") + " pool " + std::to_string(k) +
                               "/" + std::to_string(stride);
      expect_pool_matches_cpu(d, what);
    }
}

// Batch norm: statistics over 4*6*7 = 168 values per channel, different summation orders: 1e-4.
TEST_F(ModelCuda, BatchNorm) {
  const Shape s{4, 3, 6, 7}, c{1, 3, 1, 1};
  Pair x = random_pair(s, 1, -2.0f, 3.0f), g = random_pair(c, 2, 0.5f, 1.5f), b = random_pair(c, 3),
       y = random_pair(s, 4), mean = random_pair(c, 5), var = random_pair(c, 6), dy = random_pair(s, 7),
       dx = random_pair(s, 8), dg = random_pair(c, 9), db = random_pair(c, 10);
  cpu_->batch_norm_forward_training(s, 0, x.cpu.data(), g.cpu.data(), b.cpu.data(), 1e-3f, y.cpu.data(),
                                    mean.cpu.data(), var.cpu.data());
  gpu_->batch_norm_forward_training(s, 0, x.gpu.data(), g.gpu.data(), b.gpu.data(), 1e-3f, y.gpu.data(),
                                    mean.gpu.data(), var.gpu.data());
  expect_close(mean, 1e-4, "bn mean");
  expect_close(var, 1e-4, "bn var");
  expect_close(y, 1e-4, "bn forward");
  cpu_->batch_norm_backward(s, 0, x.cpu.data(), dy.cpu.data(), g.cpu.data(), mean.cpu.data(), var.cpu.data(), 1e-3f,
                            dx.cpu.data(), dg.cpu.data(), db.cpu.data());
  gpu_->batch_norm_backward(s, 0, x.gpu.data(), dy.gpu.data(), g.gpu.data(), mean.gpu.data(), var.gpu.data(), 1e-3f,
                            dx.gpu.data(), dg.gpu.data(), db.gpu.data());
  expect_close(dx, 1e-3, "bn backward data");
  expect_close(dg, 1e-4, "bn dgamma");
  expect_close(db, 1e-4, "bn dbeta");
  cpu_->batch_norm_forward_inference(s, 0, x.cpu.data(), g.cpu.data(), b.cpu.data(), mean.cpu.data(), var.cpu.data(),
                                     1e-3f, y.cpu.data());
  gpu_->batch_norm_forward_inference(s, 0, x.gpu.data(), g.gpu.data(), b.gpu.data(), mean.gpu.data(), var.gpu.data(),
                                     1e-3f, y.gpu.data());
  expect_close(y, 1e-4, "bn inference");
}

// Dropout: the counter-based mask is bit-identical on both devices; the rest is elementwise.
TEST_F(ModelCuda, DropoutScatterAndElementwise) {
  const Shape s{3, 4, 5, 7};
  const int64_t n = s.size();
  Pair x = random_pair(s, 1), y = random_pair(s, 2), mask = random_pair(s, 3), z = random_pair(s, 4);
  cpu_->dropout_forward(n, 0.3f, 12345, x.cpu.data(), y.cpu.data(), mask.cpu.data());
  gpu_->dropout_forward(n, 0.3f, 12345, x.gpu.data(), y.gpu.data(), mask.gpu.data());
  expect_close(mask, 0, "dropout mask");
  expect_close(y, 1e-6, "dropout forward");
  cpu_->multiply(n, x.cpu.data(), mask.cpu.data(), z.cpu.data());
  gpu_->multiply(n, x.gpu.data(), mask.gpu.data(), z.gpu.data());
  expect_close(z, 1e-6, "multiply");
  cpu_->axpby(n, 0.3f, x.cpu.data(), -1.5f, z.cpu.data());
  gpu_->axpby(n, 0.3f, x.gpu.data(), -1.5f, z.gpu.data());
  expect_close(z, 1e-5, "axpby");

  const Shape grid{2, 3, 4, 5};
  std::vector<float> index = {0, 3, 4, 7, 12, 19};
  Pair idx = pair(Shape{1, 1, 1, 6}, index), src = random_pair(Shape{2, 18, 1, 1}, 5), dst = random_pair(grid, 6);
  cpu_->scatter_points(2, 3, 6, idx.cpu.data(), grid, -2.0f, src.cpu.data(), dst.cpu.data());
  gpu_->scatter_points(2, 3, 6, idx.gpu.data(), grid, -2.0f, src.gpu.data(), dst.gpu.data());
  expect_close(dst, 0, "scatter");
  Pair back = random_pair(Shape{2, 18, 1, 1}, 7);
  cpu_->gather_points(2, 3, 6, idx.cpu.data(), grid, dst.cpu.data(), back.cpu.data());
  gpu_->gather_points(2, 3, 6, idx.gpu.data(), grid, dst.gpu.data(), back.gpu.data());
  expect_close(back, 0, "gather");
}

TEST_F(ModelCuda, GaussianAndMseLosses) {
  for (LossKind kind : {LossKind::kGaussian, LossKind::kMse}) {
    const Shape s{3, loss_channels(kind), 6, 7};
    auto y = random_values(3 * 42, 2, -2.0f, 2.0f);
    std::vector<float> mask(42, 1.0f);
    for (size_t i = 0; i < 42; i += 4) {
      mask[i] = 0.0f;
      y[i] = std::nanf("");
    }
    Pair o = random_pair(s, 1), t = pair(Shape{3, 1, 6, 7}, y), m = pair(Shape{1, 1, 6, 7}, mask),
         d = random_pair(s, 3);
    const double lc = masked_loss(*cpu_, kind, o.cpu, t.cpu, m.cpu, &d.cpu);
    const double lg = masked_loss(*gpu_, kind, o.gpu, t.gpu, m.gpu, &d.gpu);
    EXPECT_NEAR(lg, lc, 1e-9 * std::abs(lc)) << loss_name(kind);
    expect_close(d, 1e-4, loss_name(kind) + " gradient");
  }
}

TEST_F(ModelCuda, SgdUpdate) {
  const Shape s{1, 1, 10, 10};
  Pair w = random_pair(s, 1), g = random_pair(s, 2);
  Sgd sc({{"w", &w.cpu, &g.cpu}}, *cpu_, 0.9), sg({{"w", &w.gpu, &g.gpu}}, *gpu_, 0.9);
  for (int i = 0; i < 3; ++i) {
    sc.step(1e-2);
    sg.step(1e-2);
  }
  expect_close(w, 1e-5, "sgd weights");
}

// DeepESD forward and backward on both backends (dense heads on cuBLAS, the scatter).
TEST_F(ModelCuda, DeepEsdMatchesCpu) {
  ModelSpec spec;
  spec.name = "deepesd";
  spec.in_channels = 4;
  spec.in_h = 5;
  spec.in_w = 6;
  spec.out_h = 7;
  spec.out_w = 8;
  spec.land_mask.assign(56, 1);
  for (size_t i = 0; i < 56; i += 3) spec.land_mask[i] = 0;
  expect_net_matches_cpu(spec, Shape{2, 4, 5, 6}, 1e-3, "deepesd");
}

// train.precision tf32 (the default): cuDNN may use TF32 tensor cores (10 mantissa bits), so the
// convolutions differ from the CPU's FP32 by ~1e-3 relative per product: 1e-2 of the scale.
TEST_F(ModelCuda, Tf32ConvolutionsStayWithinTf32Tolerance) {
  ASSERT_TRUE(gpu_->set_math(MathMode::kTf32));
  ConvDesc d;
  d.in = Shape{4, 20, 15, 26};
  d.out_c = 50;
  d.kh = d.kw = 9;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 4;
  Pair x = random_pair(d.in, 1), w = random_pair(Shape{50, 20, 9, 9}, 2), b = random_pair(Shape{1, 50, 1, 1}, 3);
  Pair y = random_pair(d.out(), 4), dy = random_pair(d.out(), 5), dx = random_pair(d.in, 6);
  Pair dw = random_pair(w.cpu.shape(), 7), db = random_pair(b.cpu.shape(), 8);
  cpu_->conv2d_forward(d, x.cpu.data(), w.cpu.data(), b.cpu.data(), y.cpu.data());
  gpu_->conv2d_forward(d, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data());
  expect_close(y, 1e-2, "tf32 forward");
  cpu_->conv2d_backward_data(d, dy.cpu.data(), w.cpu.data(), dx.cpu.data());
  gpu_->conv2d_backward_data(d, dy.gpu.data(), w.gpu.data(), dx.gpu.data());
  expect_close(dx, 1e-2, "tf32 backward data");
  cpu_->conv2d_backward_weights(d, x.cpu.data(), dy.cpu.data(), dw.cpu.data(), db.cpu.data());
  gpu_->conv2d_backward_weights(d, x.gpu.data(), dy.gpu.data(), dw.gpu.data(), db.gpu.data());
  expect_close(dw, 1e-2, "tf32 backward weights");
  // Back to FP32: a plan per mode, so the FP32 tolerance holds again.
  ASSERT_TRUE(gpu_->set_math(MathMode::kFp32));
  gpu_->conv2d_forward(d, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data());
  expect_close(y, 1e-3, "fp32 forward after tf32");
}

// The caching allocator under the backend: a released block of the same size class comes back.
TEST_F(ModelCuda, ReleasedBuffersAreReused) {
  float* a = gpu_->allocate(1000);
  gpu_->release(a);
  float* b = gpu_->allocate(990);
  EXPECT_EQ(a, b);
  gpu_->release(b);
}

// --- train.precision bf16 / fp16: 16-bit inputs and weights, FP32 accumulation ---
//
// Tolerances against the CPU's FP32, as a fraction of the output's largest magnitude: rounding
// each input to BF16 (8 significant bits) errs by up to 2^-9 relative, FP16 (11 bits) by 2^-12;
// over K ~ 1600 random-signed products the error grows as sqrt(K) while the largest output grows
// about as fast, so the inputs' rounding alone stays near 2^-9 ~ 2e-3 (bf16) of the scale.
// Measured on an H100 (cuDNN 9.19, 2026-11-23): 3.5e-3 to 5.7e-3 for every bf16 pass but the
// NCHW 4x4 backward data, 1.05e-2 (the algorithm cudnnFind picks there rounds partial sums to
// BF16). Hence 2e-2 for bf16 (PyTorch's own bf16 default is rtol 1.6e-2), 2e-3 for fp16 (4.3e-4
// at worst); a wrong tap, layout or padding is off by O(1) of the scale. Both layouts of the
// 16-bit scratch (DOWNSCALE_CUDA_LAYOUT) run in each test.

// |cpu - gpu| <= rel * max|cpu| everywhere.
void expect_close_to_scale(const std::vector<float>& a, const std::vector<float>& b, double rel,
                           const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  double scale = 1e-30, worst = 0;
  for (float v : a) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  EXPECT_LE(worst, rel * scale) << what << ": worst error " << worst / scale << " of the scale " << scale;
  std::printf("%s: worst error %.2e of the scale\n", what.c_str(), worst / scale);
}

struct HalfMode {
  MathMode mode;
  const char* name;
  double tol;
};
const HalfMode kHalfModes[] = {{MathMode::kBf16, "bf16", 2e-2}, {MathMode::kFp16, "fp16", 2e-3}};

class LayoutEnv : public ScopedEnv {  // DOWNSCALE_CUDA_LAYOUT for backends made in this scope
 public:
  explicit LayoutEnv(const char* l) : ScopedEnv("DOWNSCALE_CUDA_LAYOUT", l) {}
};

// The narrow convolution path (model/cuda/cuda_narrow_conv.cu, out_c <= 4 at stride 1), forced
// with DOWNSCALE_CUDA_NARROW=1 on MNN's head scaled down (batch 2, 132 -> 3 channels, 4x4
// 'valid', 24 x 40), a 3x3 'same' with 4 outputs, a 2x2 'same' (Keras' extra bottom/right
// padding) with 1 and a 9x9 whose weights do not fit in shared memory. It computes in plain FP32 whatever the precision mode, so the three passes
// match the CPU to 1e-5 of the output's largest magnitude (FP32 sums in another order over at most
// 40 x 81 = 3,240 (forward) or 2 x 21 x 37 = 1,554 (weights) products: the bodies run on the host
// in the GPU's order come to 1.6e-6 at worst) in fp32, and in tf32 and bf16 as well, where cuDNN
// would be off by 1e-3 and more: a pass that silently fell back to cuDNN fails there.
class NarrowEnv : public ScopedEnv {  // DOWNSCALE_CUDA_NARROW for backends made in this scope
 public:
  explicit NarrowEnv(const char* v) : ScopedEnv("DOWNSCALE_CUDA_NARROW", v) {}
};

TEST_F(ModelCuda, NarrowOutputConvolutionMatchesCpu) {
  NarrowEnv env("1");
  auto gpu = make_cuda_backend(0);
  struct Case {
    const char* name;
    int c, h, w, oc, k, pt, pb;
  };
  for (const Case& k : {Case{"head 4x4 valid", 132, 24, 40, 3, 4, 0, 0}, Case{"3x3 same", 20, 17, 33, 4, 3, 1, 1},
                        Case{"2x2 same", 9, 12, 35, 1, 2, 0, 1},
                        Case{"9x9 same (packed weights 52 KB: global, not shared)", 40, 11, 19, 2, 9, 4, 4}}) {
    ConvDesc d;
    d.in = Shape{2, k.c, k.h, k.w};
    d.out_c = k.oc;
    d.kh = d.kw = k.k;
    d.pad_top = d.pad_left = k.pt;
    d.pad_bottom = d.pad_right = k.pb;
    const Shape o = d.out(), ws{k.oc, k.c, k.k, k.k}, bs{1, k.oc, 1, 1};
    const auto xv = random_values(size_t(d.in.size()), 1), wv = random_values(size_t(ws.size()), 2);
    const auto bv = random_values(size_t(k.oc), 3), dyv = random_values(size_t(o.size()), 4);
    Tensor xc(*cpu_, d.in), wc(*cpu_, ws), bc(*cpu_, bs), dyc(*cpu_, o);
    Tensor xg(*gpu, d.in), wg(*gpu, ws), bg(*gpu, bs), dyg(*gpu, o);
    for (auto [t, v] : {std::pair{&xc, &xv}, {&wc, &wv}, {&bc, &bv}, {&dyc, &dyv}, {&xg, &xv}, {&wg, &wv},
                        {&bg, &bv}, {&dyg, &dyv}})
      t->upload(v->data());
    Tensor yc(*cpu_, o), dxc(*cpu_, d.in), dwc(*cpu_, ws), dbc(*cpu_, bs);
    cpu_->conv2d_forward(d, xc.data(), wc.data(), bc.data(), yc.data());
    cpu_->conv2d_backward_data(d, dyc.data(), wc.data(), dxc.data());
    cpu_->conv2d_backward_weights(d, xc.data(), dyc.data(), dwc.data(), dbc.data());
    for (auto [m, mode] : {std::pair{MathMode::kFp32, "fp32"}, {MathMode::kTf32, "tf32"}, {MathMode::kBf16, "bf16"}}) {
      ASSERT_TRUE(gpu->set_math(m));
      const std::string what = std::string(k.name) + " " + mode;
      Tensor yg(*gpu, o), dxg(*gpu, d.in), dwg(*gpu, ws), dbg(*gpu, bs);
      gpu->conv2d_forward(d, xg.data(), wg.data(), bg.data(), yg.data());
      gpu->conv2d_backward_data(d, dyg.data(), wg.data(), dxg.data());
      gpu->conv2d_backward_weights(d, xg.data(), dyg.data(), dwg.data(), dbg.data());
      expect_close_to_scale(yc.to_host(), yg.to_host(), 1e-5, what + " forward");
      expect_close_to_scale(dxc.to_host(), dxg.to_host(), 1e-5, what + " backward data");
      expect_close_to_scale(dwc.to_host(), dwg.to_host(), 1e-5, what + " backward weights");
      expect_close_to_scale(dbc.to_host(), dbg.to_host(), 1e-5, what + " backward bias");
    }
  }
}

// The geometries the per-pass path tests run (odd, even with explicit padding, strided), and one
// geometry's three passes on a GPU backend, twice (the plan's first calls, where the per-plan
// choices are made, then the cached plan), stderr captured, then each result against the CPU's
// FP32 (bias gradient 1e-4: FP32 on both); tol(pass) gives "backward data" and "backward filter"
// theirs. Returns what the backend printed.
ConvDesc path_test_geometry(int k) {
  return k == 3 ? test::conv_desc({4, 12, 17, 19}, 24, 3, 3, 2, 1, 1, 1, 1) : same_conv(Shape{4, 20, 15, 26}, 50, k);
}
std::string passes_against_cpu(Backend& cpu, Backend& gpu, const ConvDesc& d, double fwd_tol,
                               const std::function<double(const std::string& log, const char* pass)>& tol,
                               const std::string& what, int second_lane = 0) {
  const Shape ws{d.out_c, d.in.c, d.kh, d.kw}, bs{1, d.out_c, 1, 1};
  const auto x = random_values(size_t(d.in.size()), 1, -1, 1), w = random_values(size_t(ws.size()), 2, -1, 1),
             b = random_values(size_t(d.out_c), 3, -1, 1), dy = random_values(size_t(d.out().size()), 5, -1, 1);
  Tensor xc(cpu, d.in), wc(cpu, ws), bc(cpu, bs), yc(cpu, d.out()), dyc(cpu, d.out()), dxc(cpu, d.in), dwc(cpu, ws),
      dbc(cpu, bs);
  Tensor xg(gpu, d.in), wg(gpu, ws), bg(gpu, bs), yg(gpu, d.out()), dyg(gpu, d.out()), dxg(gpu, d.in), dwg(gpu, ws),
      dbg(gpu, bs);
  for (auto* t : {&xc, &xg}) t->upload(x.data());
  for (auto* t : {&wc, &wg}) t->upload(w.data());
  for (auto* t : {&bc, &bg}) t->upload(b.data());
  for (auto* t : {&dyc, &dyg}) t->upload(dy.data());
  ds::test::StderrCapture capture;  // ended too if a pass throws
  for (int rep = 0; rep < 2; ++rep) {
    // The second time on second_lane if one is given: the plan made on the main lane's cuDNN
    // handle, its passes then run under another's (as a deferred weight pass does).
    const bool on_lane = rep == 1 && second_lane > 0;
    if (on_lane) {
      gpu.fork_lanes();
      gpu.set_lane(second_lane);
    }
    gpu.conv2d_forward(d, xg.data(), wg.data(), bg.data(), yg.data());
    gpu.conv2d_backward_data(d, dyg.data(), wg.data(), dxg.data());
    gpu.conv2d_backward_weights(d, xg.data(), dyg.data(), dwg.data(), dbg.data());
    if (on_lane) gpu.join_lanes();
  }
  const std::string log = capture.take();
  cpu.conv2d_forward(d, xc.data(), wc.data(), bc.data(), yc.data());
  expect_close_to_scale(yc.to_host(), yg.to_host(), fwd_tol, what + " forward");
  cpu.conv2d_backward_data(d, dyc.data(), wc.data(), dxc.data());
  expect_close_to_scale(dxc.to_host(), dxg.to_host(), tol(log, "backward data"), what + " backward data");
  cpu.conv2d_backward_weights(d, xc.data(), dyc.data(), dwc.data(), dbc.data());
  expect_close_to_scale(dwc.to_host(), dwg.to_host(), tol(log, "backward filter"), what + " backward weights");
  expect_close_to_scale(dbc.to_host(), dbg.to_host(), 1e-4, what + " bias gradient (FP32)");
  return log;
}

// Each 16-bit mode in each scratch layout, on a backend made in that layout: NHWC and NCHW for
// BF16, NCHW only for FP16 (cuDNN 9.19 refused FP16 backward data in NHWC for some shapes on an
// H100, BAD_PARAM; FP16's default layout is NCHW, NHWC is kept for measuring BF16).
void for_each_half_setting(const std::function<void(Backend& gpu, const HalfMode& m, const char* layout)>& run) {
  for (const char* layout : {"nhwc", "nchw"}) {
    LayoutEnv env(layout);
    auto gpu = make_cuda_backend(0);
    for (const HalfMode& m : kHalfModes) {
      if (std::string(layout) == "nhwc" && m.mode == MathMode::kFp16) continue;
      ASSERT_TRUE(gpu->set_math(m.mode));
      run(*gpu, m, layout);
    }
  }
}

// The three passes of a 9x9 'same' convolution (MNN's first layer, batch 4) and of an even 4x4
// one (explicit padding: the 16-bit cast runs on the padded copy), forward with bias.
// The cuDNN legacy 16-bit passes with BF16's timed paths and the GEMM pinned off (what those
// paths fall back to), then with each switch as the user gets it (BF16: graph engines, TF32 passes and padding by
// timing): every way within the 16-bit tolerance (TF32's 1e-2 is below BF16's 2e-2).
TEST_F(ModelCuda, Bf16Fp16ConvolutionsStayWithinTolerance) {
  for (const char* pinned : {"0", static_cast<const char*>(nullptr)}) {
    const char* v = pinned ? pinned : "";
    const ScopedEnvs env({{"DOWNSCALE_CUDA_GRAPH", v}, {"DOWNSCALE_CUDA_TF32_PASSES", v},
                          {"DOWNSCALE_CUDA_PAD_CHANNELS", v}, {"DOWNSCALE_CUDA_WGRAD_GEMM", v}});
    for_each_half_setting([&](Backend& gpu, const HalfMode& m, const char* layout) {
      for (int k : {9, 4}) {
        const ConvDesc d = path_test_geometry(k);
        const std::string what = std::string(m.name) + " " + layout + " " + std::to_string(k) + "x" +
                                 std::to_string(k) + (pinned ? " (legacy passes)" : " (defaults)");
        passes_against_cpu(*cpu_, gpu, d, m.tol, [&](const std::string&, const char*) { return m.tol; }, what);
      }
    });
  }
}

// The polyphase upsample+conv (x2 then 5x5 'same', as MNN's decoder) of c -> o channels on an
// input of 3 x c x 6 x 53 (MNN's width: big rows of 106 columns, the row kernels' lanes loop past
// 32, two NHWC tiles across, the second partial): the GPU's three passes (stderr captured and
// returned), then each against the CPU's within tol, the bias gradient within 1e-4 (FP32 sums of
// FP32 gradients on both).
std::string upsample_conv_against_cpu(Backend& cpu, Backend& gpu, int c, int o, double tol, const std::string& what) {
  const int f = 2;
  ConvDesc d;
  d.in = Shape{3, c, 12, 106};  // the upsampled shape
  d.out_c = o;
  d.kh = d.kw = 5;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 2;
  const Shape small{3, c, 6, 53}, ws{o, c, 5, 5}, bs{1, o, 1, 1};
  const auto x = random_values(size_t(small.size()), 1, -1, 1), w = random_values(size_t(ws.size()), 2, -1, 1),
             b = random_values(size_t(o), 3, -1, 1), dy = random_values(size_t(d.out().size()), 4, -1, 1);
  Tensor xc(cpu, small), wc(cpu, ws), bc(cpu, bs), yc(cpu, d.out()), dyc(cpu, d.out()), dxc(cpu, small), dwc(cpu, ws),
      dbc(cpu, bs);
  Tensor xg(gpu, small), wg(gpu, ws), bg(gpu, bs), yg(gpu, d.out()), dyg(gpu, d.out()), dxg(gpu, small), dwg(gpu, ws),
      dbg(gpu, bs);
  for (auto* t : {&xc, &xg}) t->upload(x.data());
  for (auto* t : {&wc, &wg}) t->upload(w.data());
  for (auto* t : {&bc, &bg}) t->upload(b.data());
  for (auto* t : {&dyc, &dyg}) t->upload(dy.data());
  const int64_t sc = cpu.upsample_conv2d_scratch(d, f), sg = gpu.upsample_conv2d_scratch(d, f);
  Tensor scratch_c(cpu, {1, 1, 1, int(std::max<int64_t>(sc, 1))}), scratch_g(gpu, {1, 1, 1, int(std::max<int64_t>(sg, 1))});
  ::testing::internal::CaptureStderr();
  gpu.upsample_conv2d_forward(d, f, xg.data(), wg.data(), bg.data(), yg.data(), scratch_g.data());
  gpu.upsample_conv2d_backward_data(d, f, dyg.data(), wg.data(), dxg.data(), scratch_g.data());
  gpu.upsample_conv2d_backward_weights(d, f, xg.data(), dyg.data(), dwg.data(), dbg.data(), scratch_g.data());
  const std::string log = ::testing::internal::GetCapturedStderr();
  cpu.upsample_conv2d_forward(d, f, xc.data(), wc.data(), bc.data(), yc.data(), scratch_c.data());
  expect_close_to_scale(yc.to_host(), yg.to_host(), tol, what + " forward");
  cpu.upsample_conv2d_backward_data(d, f, dyc.data(), wc.data(), dxc.data(), scratch_c.data());
  expect_close_to_scale(dxc.to_host(), dxg.to_host(), tol, what + " backward data");
  cpu.upsample_conv2d_backward_weights(d, f, xc.data(), dyc.data(), dwc.data(), dbc.data(), scratch_c.data());
  expect_close_to_scale(dwc.to_host(), dwg.to_host(), tol, what + " backward weights");
  expect_close_to_scale(dbc.to_host(), dbg.to_host(), 1e-4, what + " bias gradient (FP32)");
  return log;
}

// Input channels padded to 8 for cuDNN (DOWNSCALE_CUDA_PAD_CHANNELS=1; BF16 NHWC here, the layout
// it is for; FP16 in NHWC pads the same way): a 5x5
// 'same' 10 -> 16 convolution (channels 10 -> 16), an even 2x2 one 10 -> 8 (explicit padding: rows,
// columns and channels padded in one copy), a strided 3x3 13 -> 24, and the polyphase x2 then 5x5
// 12 -> 6 (small convolution 12 -> 24), against the CPU within BF16's tolerance; each plan's line
// must say it padded (a plan that silently did not would pass unseen). With graph engines too:
// their tensors carry the padded channels, and each pass must say an engine ran it. The GEMM
// weight gradient and the TF32 passes (which read the unpadded operands) are pinned off, so the
// padded cuDNN passes are the ones checked whatever gpu_check.sh exports. The MNN step with 16-bit
// activations (the padded copy of a 16-bit x) is DeviceCheckCuda's "channels padded to 8" row.
// DOWNSCALE_CUDA_PAD_CHANNELS=all also pads where the output channels are not a multiple of 8 (a
// 10 -> 6 5x5 here, which =1 must leave alone). =timed pads each of those where cudnnFind* times
// the padded passes faster: either way the values must hold, and each plan must say which way it
// went and why (the line with both sides' times).
TEST_F(ModelCuda, PaddedInputChannelsMatchCpu) {
  ScopedEnv cudnn_filter("DOWNSCALE_CUDA_WGRAD_GEMM", "0"), no_tf32("DOWNSCALE_CUDA_TF32_PASSES", "0");
  LayoutEnv layout("nhwc");
  const HalfMode& m = kHalfModes[0];  // bf16
  for (const char* mode : {"1", "all", "timed", "timed padded", "timed plain"})
  for (const char* graph : {"0", "1"}) {
    // "timed padded" / "timed plain": =timed with its choice forced after both plans were made and
    // timed (DOWNSCALE_CUDA_TEST_PADDING), so each way of choose_padding runs whatever the timings.
    const std::string m_s = mode;
    const bool timed = m_s.rfind("timed", 0) == 0;
    const char* forced = m_s == "timed padded" ? "padded" : m_s == "timed plain" ? "plain" : nullptr;
    ScopedEnv pad("DOWNSCALE_CUDA_PAD_CHANNELS", timed ? "timed" : mode), engines("DOWNSCALE_CUDA_GRAPH", graph),
        force("DOWNSCALE_CUDA_TEST_PADDING", forced);
    auto gpu = make_cuda_backend(0);
    ASSERT_TRUE(gpu->set_math(m.mode));
    for (const ConvDesc& d : {same_conv(Shape{4, 10, 15, 26}, 16, 5), same_conv(Shape{4, 10, 15, 26}, 8, 2),
                              test::conv_desc({4, 13, 17, 19}, 24, 3, 3, 2, 1, 1, 1, 1),
                              same_conv(Shape{4, 10, 15, 26}, 6, 5)}) {
      const std::string what = std::string("padded channels ") + mode + ", graph " + graph + " " + d.in.str() +
                               " -> " + std::to_string(d.out_c) + " " + std::to_string(d.kh) + "x" + std::to_string(d.kw);
      const std::string log =
          passes_against_cpu(*cpu_, *gpu, d, m.tol, [&](const std::string&, const char*) { return m.tol; }, what);
      const std::string cs = std::to_string((d.in.c + 7) / 8 * 8), said = "input channels padded to " + cs;
      // The plan line's own mark: what the kept plan's operands are.
      const std::string plan_padded = "; input channels padded to " + cs + " (DOWNSCALE_CUDA_PAD_CHANNELS)";
      if (timed) {
        EXPECT_NE(log.find(" by timing (DOWNSCALE_CUDA_PAD_CHANNELS=timed) (ms fwd+data+filter padded "), std::string::npos)
            << what << ": no timed padding line in\n" << log;
        if (forced && std::string(forced) == "padded") {
          EXPECT_NE(log.find(said + " by timing"), std::string::npos) << what << ": not padded in\n" << log;
          EXPECT_NE(log.find(plan_padded), std::string::npos) << what << ": the plan kept is not the padded one\n" << log;
        } else if (forced) {
          EXPECT_NE(log.find("input channels as written, not padded to " + cs + " by timing"), std::string::npos)
              << what << ": padded where forced plain in\n" << log;
          EXPECT_EQ(log.find(plan_padded), std::string::npos) << what << ": the plan kept is the padded one\n" << log;
        }
      } else if (d.out_c % 8 == 0 || std::string(mode) == "all") {
        EXPECT_NE(log.find(said), std::string::npos) << what << ": no '" << said << "' in\n" << log;
      } else {
        EXPECT_EQ(log.find(said), std::string::npos) << what << ": padded where =1 must not:\n" << log;
      }
      if (std::string(graph) == "1") {
        for (const char* pass : {"forward by cuDNN graph engine", "backward data by cuDNN graph engine",
                                 "backward filter by cuDNN graph engine"})
          EXPECT_NE(log.find(pass), std::string::npos) << what << ": no '" << pass << "' line in\n" << log;
      }
    }
    const std::string what =
        std::string("padded channels ") + mode + ", graph " + graph + " upsample+conv 12 -> 6 (small 12 -> 24)";
    const std::string log = upsample_conv_against_cpu(*cpu_, *gpu, 12, 6, m.tol, what);
    const std::string said = !timed                          ? "input channels padded to 16"
                             : !forced                         ? "16 by timing"
                             : std::string(forced) == "padded" ? "input channels padded to 16 by timing"
                                                               : "input channels as written, not padded to 16 by timing";
    EXPECT_NE(log.find(said), std::string::npos) << what << ": no '" << said << "' line in\n" << log;
  }
}

// cuDNN's graph API engines (DOWNSCALE_CUDA_GRAPH=1: each pass on the fastest engine that runs,
// whatever the legacy algorithm's time) against the CPU: odd, even (explicit padding) and strided
// geometries, NHWC and NCHW. Each plan's line must say the engine ran its passes: a graph that no
// engine takes would otherwise pass on the legacy algorithms unseen.
TEST_F(ModelCuda, GraphEnginesMatchCpu) {
  // The TF32 passes and the padding (BF16's defaults) pinned off: every pass an engine's.
  ScopedEnv graph("DOWNSCALE_CUDA_GRAPH", "1"), cudnn_filter("DOWNSCALE_CUDA_WGRAD_GEMM", "0"),
      no_tf32("DOWNSCALE_CUDA_TF32_PASSES", "0"), no_pad("DOWNSCALE_CUDA_PAD_CHANNELS", "0");
  for_each_half_setting([&](Backend& gpu, const HalfMode& m, const char* layout) {
    ASSERT_GT(gpu.lanes(), 0) << "lanes are the default: the second run below needs one";
    for (int k : {9, 4, 3}) {
      const ConvDesc d = path_test_geometry(k);
      const std::string what = std::string(m.name) + " " + layout + " " + d.in.str() + " " + std::to_string(k) +
                               "x" + std::to_string(k) + "/" + std::to_string(d.stride);
      // Planned on the main lane, then run again on lane 1 (its own cuDNN handle, as a deferred
      // weight pass runs on the weights lane's): the values compared are lane 1's.
      const std::string log = passes_against_cpu(
          *cpu_, gpu, d, m.tol, [&](const std::string&, const char*) { return m.tol; }, what, 1);
      for (const char* pass : {"forward by cuDNN graph engine", "backward data by cuDNN graph engine",
                               "backward filter by cuDNN graph engine"})
        EXPECT_NE(log.find(pass), std::string::npos) << what << ": no '" << pass << "' line in\n" << log;
      // Each engine made again for lane 1's handle (graph_plan_here), not refused there: where
      // cuDNN refuses, the pass falls back to its legacy algorithm with this line, which would
      // leave the graph engines out of MNN's deferred weight passes.
      EXPECT_EQ(log.find("not made for another lane's cuDNN handle"), std::string::npos) << what << ":\n" << log;
      EXPECT_EQ(log.find("algorithm graph engine"), std::string::npos) << what << ": an engine refused\n" << log;
    }
  });
}

// The 16-bit modes' TF32 passes (DOWNSCALE_CUDA_TF32_PASSES, model/cuda/cuda_conv_tf32.cu):
// forced (1), both backward passes of each plan must say they ran as TF32 and match the CPU within
// TF32's tolerance (1e-2 of the scale, as Tf32ConvolutionsStayWithinTf32Tolerance); timed, each
// says which way it went and stays within that way's tolerance (the 16-bit one, or TF32's where it
// is the larger: FP16's 2e-3 is below it). Odd, even (explicit padding) and
// strided geometries, NHWC and NCHW; the forward stays 16-bit. The whole net with 16-bit
// activations (the widened x of the weight gradient, the polyphase passes) is DeviceCheckCuda's
// "TF32 passes" rows.
TEST_F(ModelCuda, Tf32PassesInHalfModesMatchCpu) {
  for (const char* mode_env : {"1", "timed"}) {
    ScopedEnv tf32("DOWNSCALE_CUDA_TF32_PASSES", mode_env);
    const bool forced = std::string(mode_env) == "1";
    for_each_half_setting([&](Backend& gpu, const HalfMode& m, const char* layout) {
      for (int k : {9, 4, 3}) {
        const ConvDesc d = path_test_geometry(k);
        const std::string what = std::string("TF32 passes ") + mode_env + " " + m.name + " " + layout + " " +
                                 d.in.str() + " " + std::to_string(k) + "x" + std::to_string(k) + "/" +
                                 std::to_string(d.stride);
        // TF32's own tolerance where a pass ran as TF32: above FP16's (TF32 keeps FP16's 10
        // mantissa bits, and its tensor cores may truncate), below BF16's.
        const std::string log = passes_against_cpu(
            *cpu_, gpu, d, m.tol,
            [&](const std::string& said, const char* pass) {
              return said.find(std::string(pass) + " as TF32") != std::string::npos ? std::max(m.tol, 1e-2) : m.tol;
            },
            what);
        for (const char* pass : {"backward data", "backward filter"}) {
          const std::string said = std::string(pass) + (forced ? " as TF32 (DOWNSCALE_CUDA_TF32_PASSES=1)" : "");
          EXPECT_NE(log.find(said), std::string::npos) << what << ": no '" << said << "' line in\n" << log;
          if (!forced) {
            EXPECT_TRUE(log.find(std::string(pass) + " as TF32 (ms") != std::string::npos ||
                        log.find(std::string(pass) + " in 16 bits (ms") != std::string::npos)
                << what << ": no timed choice for the " << pass << " in\n" << log;
            EXPECT_EQ(log.find("(ms tf32/16-bit -1.000"), std::string::npos)
                << what << ": the TF32 pass failed while timed:\n" << log;
          }
        }
      }
      // The mode is the backend's again after the TF32 passes: a new plan is a 16-bit one.
      const ConvDesc d = same_conv(Shape{2, 6, 9, 10}, 8, 5);
      ::testing::internal::CaptureStderr();
      Tensor xg(gpu, d.in), wg(gpu, {8, 6, 5, 5}), yg(gpu, d.out());
      const auto x = random_values(size_t(d.in.size()), 1, -1, 1), w = random_values(size_t(8 * 6 * 25), 2, -1, 1);
      xg.upload(x.data());
      wg.upload(w.data());
      gpu.conv2d_forward(d, xg.data(), wg.data(), nullptr, yg.data());
      const std::string log = ::testing::internal::GetCapturedStderr();
      EXPECT_NE(log.find(std::string("train.precision ") + m.name), std::string::npos)
          << "after the TF32 passes the next plan is not " << m.name << ":\n" << log;
    });
  }
}

// The polyphase upsample+conv (x2 then 5x5, as MNN's decoder) through its small 16-bit convolution.
TEST_F(ModelCuda, Bf16Fp16UpsampleConvStaysWithinTolerance) {
  for (const char* layout : {"nhwc", "nchw"}) {
    LayoutEnv env(layout);
    auto gpu = make_cuda_backend(0);
    for (const HalfMode& m : kHalfModes) {
      ASSERT_TRUE(gpu->set_math(m.mode));
      upsample_conv_against_cpu(*cpu_, *gpu, 16, 24, m.tol, std::string(m.name) + " " + layout + " upsample+conv");
    }
  }
}

// The 16-bit casts fused into their neighbours (DOWNSCALE_CUDA_FUSE16, on by default):
// conv+bias+ReLU's epilogue, conv2d_backward's one rounding of the masked gradient for both
// passes, and the polyphase interleave/de-interleave straight from/into 16 bits, each with its
// ReLU, against the CPU; and the same with the fusions off (the separate casts), so a difference
// between the two paths beyond the 16-bit tolerance shows. Tolerances as the tests above; the
// bias gradients are FP32 sums of FP32 gradients on both paths (1e-4).
TEST_F(ModelCuda, Bf16Fp16FusedCastsWithReluMatchCpu) {
  // Both scratch layouts: in NHWC the casts are the tiled transposes (model/kernels/nhwc_tile.h),
  // fused with the epilogue and the gradient's rounding, and the polyphase interleave's NHWC
  // tiles (polyphase_nhwc.h).
  for (const char* layout : {"nchw", "nhwc"})
  for (const char* fuse : {"1", "0"}) {
    LayoutEnv layout_env(layout);
    ScopedEnv env("DOWNSCALE_CUDA_FUSE16", fuse);
    auto gpu = make_cuda_backend(0);
    for (const HalfMode& m : kHalfModes) {
      // fp16 in NHWC: cuDNN refused some backward-data shapes (above); NHWC is measured in bf16.
      if (std::string(layout) == "nhwc" && m.mode == MathMode::kFp16) continue;
      ASSERT_TRUE(gpu->set_math(m.mode));
      const std::string mode = std::string(m.name) + " " + layout + " FUSE16=" + fuse;
      // (kernel, factor, output channels): a 5x5 'same' conv with ReLU (MNN's branch), an even
      // 2x2 one (explicit padding), x2 then 8x8 (MNN's up2_conv1, polyphase), and a 4x4 'valid'
      // one to 3 channels (MNN's head shape, where the narrow FP32 kernels may take passes).
      struct Geo {
        int k, f, out_c;
      };
      for (const Geo& g : {Geo{5, 1, 20}, Geo{2, 1, 20}, Geo{8, 2, 20}, Geo{4, 1, 3}}) {
        const int k = g.k, f = g.f;
        ConvDesc d;
        d.in = f == 1 ? Shape{4, 12, 15, 26} : Shape{2, 10, 12, 14};
        d.out_c = g.out_c;
        d.kh = d.kw = k;
        if (g.out_c > 4) {  // 'same'; the narrow case stays 'valid'
          same_padding(k, d.pad_top, d.pad_bottom);
          same_padding(k, d.pad_left, d.pad_right);
        }
        const Shape xs = f == 1 ? d.in : Shape{d.in.n, d.in.c, d.in.h / f, d.in.w / f}, o = d.out();
        const Shape ws{d.out_c, d.in.c, k, k}, bs{1, d.out_c, 1, 1};
        const auto x = random_values(size_t(xs.size()), 1, -1, 1), w = random_values(size_t(ws.size()), 2, -0.2f, 0.2f),
                   b = random_values(size_t(d.out_c), 3, -0.5f, 0.5f), dy = random_values(size_t(o.size()), 4, -1, 1);
        // On this test's backend `gpu` (its own stream), not the fixture's.
        const auto both = [&](Shape sh, const std::vector<float>& v) {
          Pair q{Tensor(*cpu_, sh), Tensor(*gpu, sh)};
          q.cpu.upload(v.data());
          q.gpu.upload(v.data());
          return q;
        };
        Pair xp = both(xs, x), wp = both(ws, w), bp = both(bs, b), dyp = both(o, dy);
        Pair y = both(o, random_values(size_t(o.size()), 5)), dx = both(xs, random_values(size_t(xs.size()), 6)),
             dw = both(ws, random_values(size_t(ws.size()), 7)), db = both(bs, random_values(size_t(bs.size()), 8));
        Backend* bes[2] = {cpu_.get(), gpu.get()};
        Tensor* ys[2] = {&y.cpu, &y.gpu};
        const std::string what = mode + " " + std::to_string(k) + "x" + std::to_string(k) + " -> " +
                                 std::to_string(g.out_c) + (f > 1 ? " after x2" : "");
        const int64_t scratch_n = std::max<int64_t>(
            {o.size(), cpu_->upsample_conv2d_scratch(d, f), gpu->upsample_conv2d_scratch(d, f),
             cpu_->upsample_conv2d_backward_scratch(d, f, true), gpu->upsample_conv2d_backward_scratch(d, f, true)});
        const auto run = [&](int i, bool forward) {
          Backend& be = *bes[i];
          Tensor& X = i ? xp.gpu : xp.cpu;
          Tensor& W = i ? wp.gpu : wp.cpu;
          Tensor& B = i ? bp.gpu : bp.cpu;
          Tensor& DY = i ? dyp.gpu : dyp.cpu;
          Tensor scratch(be, Shape{1, 1, 1, int(scratch_n)});
          if (forward && f == 1) be.conv2d_relu_forward(d, X.data(), W.data(), B.data(), ys[i]->data());
          if (forward && f > 1)
            be.upsample_conv2d_relu_forward(d, f, X.data(), W.data(), B.data(), ys[i]->data(), scratch.data());
          if (forward) return;
          float* DX = (i ? dx.gpu : dx.cpu).data();
          float* DW = (i ? dw.gpu : dw.cpu).data();
          float* DB = (i ? db.gpu : db.cpu).data();
          if (f == 1)
            be.conv2d_backward(d, X.data(), ys[i]->data(), DY.data(), W.data(), DX, DW, DB, scratch.data());
          else
            be.upsample_conv2d_backward(d, f, X.data(), ys[i]->data(), DY.data(), W.data(), DX, DW, DB,
                                        scratch.data());
        };
        run(0, true);
        run(1, true);
        expect_close_to_scale(y.cpu.to_host(), y.gpu.to_host(), m.tol, what + " forward+ReLU");
        // Backward from the GPU's y on both sides: the same ReLU mask (a pre-activation within
        // rounding of 0 may be cut on one side only, and one such term moves a gradient by O(1)).
        const std::vector<float> y_gpu = y.gpu.to_host();
        y.cpu.upload(y_gpu.data());
        run(0, false);
        run(1, false);
        expect_close_to_scale(dx.cpu.to_host(), dx.gpu.to_host(), m.tol, what + " backward data");
        expect_close_to_scale(dw.cpu.to_host(), dw.gpu.to_host(), m.tol, what + " backward weights");
        expect_close_to_scale(db.cpu.to_host(), db.gpu.to_host(), 1e-4, what + " bias gradient (FP32)");
      }
    }
  }
}

// Five lanes are the default (2026-11-28: faster on an H200 in every pair of runs), unset or empty;
// DOWNSCALE_CUDA_LANES=0 is one stream, and the per-pass clocks (one stream) turn the default off.
// MNN's input on the North America grid (20 x 30 x 53) at batch 4 and a gradient of its output,
// random and uploaded: the step the lane tests run.
struct MnnStep {
  Tensor x, d;
};
MnnStep mnn_step_inputs(Backend& gpu, const Net& net) {
  const Shape in{4, 20, 30, 53};
  MnnStep s{Tensor(gpu, in), Tensor(gpu, net.output_shape(in.n))};
  const auto xv = random_values(size_t(in.size()), 1), dv = random_values(size_t(s.d.size()), 2);
  s.x.upload(xv.data());
  s.d.upload(dv.data());
  return s;
}

// BF16's defaults (model/cuda/cuda_backend.h, above graph_env_): with the five switches unset, a
// BF16 backend times the graph engines, the TF32 passes, the padded channels and the GEMM in NHWC
// (each says so with its times) and defers MNN's weight passes; a TF32 backend does none of that
// (each run a backend of its own). A switch set to 0 keeps its path off under BF16.
TEST_F(ModelCuda, Bf16DefaultsAreTheTimedPaths) {
  const auto step_log = [&](const char* pinned, MathMode mode) {
    const ScopedEnvs env({{"DOWNSCALE_CUDA_GRAPH", pinned}, {"DOWNSCALE_CUDA_TF32_PASSES", pinned},
                          {"DOWNSCALE_CUDA_PAD_CHANNELS", pinned}, {"DOWNSCALE_CUDA_DEFER_WEIGHTS", pinned},
                          {"DOWNSCALE_CUDA_WGRAD_GEMM", ""}, {"DOWNSCALE_CUDA_LAYOUT", ""},
                          {"DOWNSCALE_CUDA_ACTIVATIONS16", ""}, {"DOWNSCALE_CUDA_LANES", "5"},
                          {"DOWNSCALE_CUDA_PASS_TIMES", ""}});
    auto gpu = make_cuda_backend(0);
    EXPECT_TRUE(gpu->set_math(mode));
    Net net(test::mnn_spec(20, 30, 53), *gpu);
    net.init(3);
    const MnnStep in = mnn_step_inputs(*gpu, net);
    ds::test::StderrCapture capture;
    net.set_lanes(true);
    net.forward(in.x);
    net.backward(in.d);
    gpu->synchronize();
    return capture.take();
  };
  // Each path's line, in any of its forms.
  const std::vector<std::vector<std::string>> timed = {{"by cuDNN graph engine", "stays on legacy algorithm"},
                                                       {"ms tf32/16-bit"},
                                                       {" by timing (DOWNSCALE_CUDA_PAD_CHANNELS=timed)"},
                                                       {"ms im2col+cuBLAS/cuDNN"},
                                                       {"weight gradients deferred to a stream of their own"}};
  const auto says = [](const std::string& log, const std::vector<std::string>& forms) {
    return std::any_of(forms.begin(), forms.end(), [&](const std::string& f) { return log.find(f) != std::string::npos; });
  };
  const std::string bf16 = step_log("", MathMode::kBf16), tf32 = step_log("", MathMode::kTf32),
                    pinned = step_log("0", MathMode::kBf16);
  for (const auto& forms : timed) {
    const std::string& line = forms[0];
    EXPECT_TRUE(says(bf16, forms)) << "bf16, switches unset: no '" << line << "' line in\n" << bf16;
    if (line == "ms im2col+cuBLAS/cuDNN") continue;  // TF32 times the GEMM too (NCHW)
    EXPECT_FALSE(says(tf32, forms)) << "tf32: a '" << line << "' line in\n" << tf32;
    EXPECT_FALSE(says(pinned, forms)) << "bf16, switches 0: a '" << line << "' line in\n" << pinned;
  }
}

TEST_F(ModelCuda, FiveLanesByDefaultOneStreamWhenAskedOrTimed) {
  const ScopedEnv no_times("DOWNSCALE_CUDA_PASS_TIMES", nullptr);
  for (const char* v : {static_cast<const char*>(nullptr), ""}) {
    const ScopedEnv lanes("DOWNSCALE_CUDA_LANES", v);
    EXPECT_EQ(make_cuda_backend(0)->lanes(), 5) << (v ? "empty" : "unset");
  }
  {
    const ScopedEnv lanes("DOWNSCALE_CUDA_LANES", "0");
    EXPECT_EQ(make_cuda_backend(0)->lanes(), 0);
  }
  {
    const ScopedEnv lanes("DOWNSCALE_CUDA_LANES", "3");
    EXPECT_EQ(make_cuda_backend(0)->lanes(), 3);
  }
  const ScopedEnv lanes("DOWNSCALE_CUDA_LANES", nullptr), times("DOWNSCALE_CUDA_PASS_TIMES", "1");
  EXPECT_EQ(make_cuda_backend(0)->lanes(), 0);
}

// Lanes (DOWNSCALE_CUDA_LANES=5: MNN's five branches on five more streams, the allocator holding
// releases between fork and join): the same backend, so the same cuDNN plans, with the Net's
// lanes on and off. Where two runs without lanes agree bit for bit (deterministic algorithms),
// the run with lanes must too: any difference is a missing wait (a race) or a shared buffer.
// Where cuDNN picked algorithms that sum in a varying order, 1e-5 of the scale instead (BF16:
// 1e-2, a varying sum rounded to 16 bits moves by its ulp). Also with the deferred weight passes
// (DOWNSCALE_CUDA_DEFER_WEIGHTS=1, cuda_lanes.cu: lanes off leaves no region, so nothing is
// deferred): the Net reuses gradient buffers (memory reuse on, as in training, unlike the device
// check), so a deferred pass reading a buffer a later layer overwrote shows here.
TEST_F(ModelCuda, LanesGiveTheSameStepAsOneStream) {
  for (const char* defer : {"0", "1"})
    for (const MathMode mode : {MathMode::kFp32, MathMode::kBf16}) {
      std::unique_ptr<Backend> gpu;
      {
        ScopedEnv lanes("DOWNSCALE_CUDA_LANES", "5"), deferred("DOWNSCALE_CUDA_DEFER_WEIGHTS", defer);
        gpu = make_cuda_backend(0);
      }
      ASSERT_EQ(gpu->lanes(), 5);
      ASSERT_TRUE(gpu->set_math(mode));
      const std::string how = std::string(math_mode_name(mode)) + ", DOWNSCALE_CUDA_DEFER_WEIGHTS=" + defer;
      Net net(test::mnn_spec(20, 30, 53), *gpu);
      net.init(3);
      const MnnStep in = mnn_step_inputs(*gpu, net);
      const Tensor &x = in.x, &d = in.d;
      const auto run = [&](bool lanes) {
        net.set_lanes(lanes);
        std::vector<std::vector<float>> r{net.forward(x).to_host()};
        net.backward(d);
        for (const Param& p : net.params()) r.push_back(p.grad->to_host());
        return r;
      };
      // Lanes first: the plans (cudnnFind) and the lanes' streams are made inside the first region.
      const auto on = run(true), off1 = run(false), off2 = run(false), on2 = run(true);
      const bool deterministic = off1 == off2;
      std::printf("lanes (%s): one-stream runs %s\n", how.c_str(),
                  deterministic ? "agree bit for bit" : "differ (cuDNN's order varies)");
      const auto params = net.params();
      for (const auto* got : {&on, &on2})
        for (size_t i = 0; i < off1.size(); ++i) {
          const std::string what = (i == 0 ? std::string("output") : params[i - 1].name) + " (" + how + ")";
          if (deterministic)
            EXPECT_EQ(off1[i], (*got)[i]) << what << " differs with lanes";
          else
            expect_close_to_scale(off1[i], (*got)[i], mode == MathMode::kBf16 ? 1e-2 : 1e-5, what + " with lanes");
        }
    }
}

// Dense through cublasGemmEx's FAST_16BF / FAST_16F compute types (300 products per output).
TEST_F(ModelCuda, Bf16Fp16DenseStaysWithinTolerance) {
  const int n = 5, in = 300, out = 70;
  const auto x = random_values(size_t(n) * in, 1, -1, 1), w = random_values(size_t(out) * in, 2, -1, 1),
             b = random_values(out, 3, -1, 1);
  Tensor xc(*cpu_, {n, in, 1, 1}), wc(*cpu_, {out, in, 1, 1}), bc(*cpu_, {1, out, 1, 1}), yc(*cpu_, {n, out, 1, 1});
  Tensor xg(*gpu_, {n, in, 1, 1}), wg(*gpu_, {out, in, 1, 1}), bg(*gpu_, {1, out, 1, 1}), yg(*gpu_, {n, out, 1, 1});
  for (auto* t : {&xc, &xg}) t->upload(x.data());
  for (auto* t : {&wc, &wg}) t->upload(w.data());
  for (auto* t : {&bc, &bg}) t->upload(b.data());
  cpu_->dense_forward(n, in, out, xc.data(), wc.data(), bc.data(), yc.data());
  for (const HalfMode& m : kHalfModes) {
    ASSERT_TRUE(gpu_->set_math(m.mode));
    gpu_->dense_forward(n, in, out, xg.data(), wg.data(), bg.data(), yg.data());
    expect_close_to_scale(yc.to_host(), yg.to_host(), m.tol, std::string(m.name) + " dense forward");
  }
}

TEST_F(ModelCuda, AllFiniteFindsInfAndNan) {
  for (Backend* be : {cpu_.get(), gpu_.get()}) {
    Tensor t(*be, {3, 5, 70, 90});
    const auto v = random_values(size_t(t.size()), 1, -1e30f, 1e30f);
    t.upload(v.data());
    EXPECT_TRUE(be->all_finite(t.size(), t.data())) << be->name();
    be->fill(t.data() + 12345, 1, std::numeric_limits<float>::infinity());
    EXPECT_FALSE(be->all_finite(t.size(), t.data())) << be->name();
    t.upload(v.data());
    be->fill(t.data() + t.size() - 1, 1, std::nanf(""));
    EXPECT_FALSE(be->all_finite(t.size(), t.data())) << be->name();
    EXPECT_TRUE(be->all_finite(t.size() - 1, t.data())) << be->name();
    // Several buffers, one synchronisation: the NaN in the last one is found, and not when the
    // span stops before it; an empty span is skipped.
    Tensor u(*be, {1, 1, 1, 9});
    u.upload(v.data());
    EXPECT_FALSE(be->all_finite({{u.data(), u.size()}, {t.data(), 0}, {t.data(), t.size()}})) << be->name();
    EXPECT_TRUE(be->all_finite({{u.data(), u.size()}, {t.data(), t.size() - 1}})) << be->name();
  }
}

// The demo net trained 100 Adam steps on one batch in bf16 / fp16 (a fixed loss scale of 1024,
// the gradients checked finite and unscaled) follows the FP32 loss curve: every step within 8 %
// (bf16) / 4 % (fp16) of FP32's loss, and the loss falls by the same amount to within 15 %. (On
// the CPU the FP32 curve goes 2.489 -> 1.862; 16-bit rounding perturbs each step by ~1e-3, and
// Adam's trajectories drift apart slowly, hence bounds well above the per-step error.)
TEST_F(ModelCuda, DemoNetLossCurvesBf16Fp16FollowFp32) {
  ModelSpec spec;
  spec.in_channels = 4;
  spec.in_h = 12;
  spec.in_w = 16;
  spec.filters = {16, 16, 16};
  const int batch = 8, steps = 100;
  auto curve = [&](MathMode mode, float loss_scale) {
    EXPECT_TRUE(gpu_->set_math(mode));
    Net net(spec, *gpu_);
    net.init(1);
    const Shape xs{batch, 4, 12, 16}, os = net.output_shape(batch), ys{batch, 1, os.h, os.w}, ms{1, 1, os.h, os.w};
    auto yv = random_values(size_t(ys.size()), 3, -4, 6);
    for (float& v : yv) v = v < 0 ? 0.0f : v;  // dry about 40 % of the points
    Tensor x(*gpu_, xs), y(*gpu_, ys), mask(*gpu_, ms), d_out(*gpu_, os);
    x.upload(random_values(size_t(xs.size()), 2, -1, 1).data());
    y.upload(yv.data());
    gpu_->fill(mask.data(), mask.size(), 1.0f);
    Adam adam(net.params(), *gpu_);
    std::vector<double> losses;
    for (int i = 0; i < steps; ++i) {
      losses.push_back(bernoulli_gamma_loss(*gpu_, net.forward(x), y, mask, &d_out));
      gpu_->scale(d_out.size(), loss_scale, d_out.data());
      net.backward(d_out);
      bool finite = true;
      for (const auto& p : net.params()) finite = finite && gpu_->all_finite(p.grad->size(), p.grad->data());
      EXPECT_TRUE(finite) << "step " << i;
      for (const auto& p : net.params()) gpu_->scale(p.grad->size(), 1.0f / loss_scale, p.grad->data());
      adam.step(3e-3);
    }
    return losses;
  };
  const auto fp32 = curve(MathMode::kFp32, 1.0f);
  ASSERT_LT(fp32.back(), 0.9 * fp32.front()) << "the FP32 run did not learn: the comparison would mean nothing";
  for (const HalfMode& m : kHalfModes) {
    const auto c = curve(m.mode, m.mode == MathMode::kFp16 ? 1024.0f : 1.0f);
    const double bound = m.mode == MathMode::kBf16 ? 0.08 : 0.04;
    double worst = 0;
    for (int i = 0; i < steps; ++i) worst = std::max(worst, std::abs(c[i] - fp32[i]) / std::abs(fp32[i]));
    std::printf("%s: loss %.5f -> %.5f (fp32 %.5f -> %.5f), worst step difference %.2e\n", m.name, c.front(),
                c.back(), fp32.front(), fp32.back(), worst);
    EXPECT_LE(worst, bound) << m.name;
    EXPECT_NEAR(c.front() - c.back(), fp32.front() - fp32.back(), 0.15 * (fp32.front() - fp32.back())) << m.name;
  }
}

// 16-bit activations on the GPU (DOWNSCALE_CUDA_ACTIVATIONS16=1), in NCHW and in NHWC
// (DOWNSCALE_CUDA_LAYOUT=nhwc: the activations the cuDNN operands in NHWC, no transposing cast
// around the convolutions; up to up2_conv1's input, the head's narrow kernels reading FP32):
// MNN's two steps with its
// activations held in BF16/FP16 from the first convolution to the head's input (A), against the
// same 16-bit math with FP32 activations (B, Net::set_activations16(false)) and against FP32 math
// (R), then an inference forward (the reused slots, as predict runs). The head both on the narrow
// FP32 kernels (its 16-bit input widened) and on cuDNN (DOWNSCALE_CUDA_NARROW=1 / 0), and the
// branches on five streams. The update is plain SGD: Adam's first step moves every weight by about
// the rate whatever the gradient's size.
// Not element by element against B: on an H100 (2026-11-24) A and B differed by up to 5 % of a
// tensor's largest value in the weight gradients, in every setting. Both round to 16 bits, at
// different places (B's narrow head reads the FP32 output A stores rounded; B's 16-bit-input
// plans cast where A's read; their cuDNN algorithms are timed apart), and the weight gradient of
// a first convolution is a sum whose terms mostly cancel, so one rounding's difference weighs
// tens of times more there (train/device_check.cpp measured the same on MNN). What 16-bit
// activations must not do is add error of their own: each tensor of A stays as close to R (FP32
// math) as B does, relative L2 within 2 x B's distance plus twice the mode's unit roundoff
// (bf16 2 x 2^-8 = 7.8e-3, fp16 2 x 2^-11 = 9.8e-4), and within the device check's tolerance of R.
// Measured there: the worst tensor (a first convolution's weight gradient) 0.138-0.145 from R on
// both paths in BF16, 0.048-0.054 in FP16; so in those few gradients the bound lets a fault double
// the error, while the tensors close to R (the outputs and the loss) are held
// tightly.
TEST_F(ModelCuda, Activations16StepFollowsFp32Activations) {
  const ScopedEnv on("DOWNSCALE_CUDA_ACTIVATIONS16", "1"), fused("DOWNSCALE_CUDA_FUSE16", nullptr);
  // BF16's timed paths pinned off: chosen by timing apart on A and B, one side's TF32 weight
  // gradient would be measured here as the other side's error.
  const ScopedEnvs legacy({{"DOWNSCALE_CUDA_GRAPH", "0"}, {"DOWNSCALE_CUDA_TF32_PASSES", "0"},
                           {"DOWNSCALE_CUDA_PAD_CHANNELS", "0"}, {"DOWNSCALE_CUDA_DEFER_WEIGHTS", "0"}});
  const ModelSpec spec = test::mnn_spec(6, 6, 8);
  const int n = 3;
  struct Setting {
    const char* narrow;
    const char* lanes;
  };
  const auto rel_l2 = [](const std::vector<float>& got, const std::vector<float>& ref) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      diff += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    return norm > 0 ? std::sqrt(diff / norm) : (diff > 0 ? 1.0 : 0.0);
  };
  struct LayoutSetting {
    const char* layout;
    Setting set;
  };
  for (const LayoutSetting& ls : {LayoutSetting{"nchw", {"1", "0"}}, LayoutSetting{"nchw", {"0", "0"}},
                                  LayoutSetting{"nchw", {nullptr, "5"}}, LayoutSetting{"nhwc", {"1", "0"}},
                                  LayoutSetting{"nhwc", {nullptr, "5"}}}) {
    const Setting& set = ls.set;
    const bool nhwc = std::string(ls.layout) == "nhwc";
    const ScopedEnv layout("DOWNSCALE_CUDA_LAYOUT", ls.layout), narrow("DOWNSCALE_CUDA_NARROW", set.narrow),
        lanes("DOWNSCALE_CUDA_LANES", set.lanes);
    const std::string where = std::string(ls.layout) + ", narrow " + (set.narrow ? set.narrow : "timed") + ", lanes " +
                              set.lanes;
    auto be = make_cuda_backend(0);
    EXPECT_EQ(be->activation_dtype(), DType::kF32) << "FP32/TF32 math has no 16-bit activations";
    for (const HalfMode& m : kHalfModes) {
      // NHWC is BF16's alone: cuDNN 9.19 refused FP16 backward data in NHWC for MNN's 25 -> 10
      // convolutions on an H100 (BAD_PARAM; Bf16Fp16ConvolutionsStayWithinTolerance).
      if (nhwc && m.mode == MathMode::kFp16) continue;
      const DType t = m.mode == MathMode::kBf16 ? DType::kBf16 : DType::kF16;
      const float loss_scale = m.mode == MathMode::kFp16 ? 1024.0f : 1.0f;  // R too: the same scaled gradients
      auto steps = [&](MathMode mode, bool act16) {
        EXPECT_TRUE(be->set_math(mode));
        Net net(spec, *be);
        net.init(7);
        net.set_activations16(act16);
        const Shape os = net.output_shape(n);
        auto yv = random_values(size_t(os.h) * os.w * n, 3, -4, 6);
        for (float& v : yv) v = v < 0 ? 0.0f : v;
        Tensor x(*be, Shape{n, 6, 6, 8}), y(*be, Shape{n, 1, os.h, os.w}), mask(*be, Shape{1, 1, os.h, os.w}),
            d(*be, os);
        x.upload(random_values(size_t(x.size()), 11).data());
        y.upload(yv.data());
        be->fill(mask.data(), mask.size(), 1.0f);
        std::vector<std::vector<float>> out;
        for (int step = 0; step < 2; ++step) {
          const Tensor& o = net.forward(x);
          const DType want = act16 && mode == m.mode ? t : DType::kF32;
          // NHWC: the head's input (up2_conv1's output) stays FP32 for its narrow kernels.
          EXPECT_EQ(net.activation_dtype("up2_conv1"), nhwc ? DType::kF32 : want) << m.name << ", " << where;
          EXPECT_EQ(net.activation_dtype("up1_conv3"), want) << m.name << ", " << where;
          out.push_back(o.to_host());
          out.push_back({float(bernoulli_gamma_loss(*be, o, y, mask, &d))});
          be->scale(d.size(), loss_scale, d.data());
          net.backward(d);
          for (const Param& p : net.params()) {
            out.push_back(p.grad->to_host());
            be->axpby(p.value->size(), -1e-3f / loss_scale, p.grad->data(), 1.0f, p.value->data());
          }
        }
        net.set_mode(ForwardMode{false, 0});
        out.push_back(net.forward(x).to_host());
        return out;
      };
      const auto a = steps(m.mode, true), b = steps(m.mode, false), r = steps(MathMode::kFp32, false);
      ASSERT_EQ(a.size(), b.size());
      ASSERT_EQ(a.size(), r.size());
      const double unit = m.mode == MathMode::kBf16 ? 1.0 / 256 : 1.0 / 2048;  // unit roundoff
      const double check_tol = m.mode == MathMode::kBf16 ? 0.3 : 0.1;  // train/device_check.cpp's
      double worst_a = 0, worst_b = 0, worst_ab = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        const double ar = rel_l2(a[i], r[i]), br = rel_l2(b[i], r[i]);
        worst_a = std::max(worst_a, ar);
        worst_b = std::max(worst_b, br);
        worst_ab = std::max(worst_ab, rel_l2(a[i], b[i]));
        EXPECT_LE(ar, 2 * br + 2 * unit) << m.name << ", " << where << ": tensor " << i << " (A-R " << ar << ", B-R "
                                         << br << ")";
        EXPECT_LE(ar, check_tol) << m.name << ", " << where << ": tensor " << i;
      }
      std::printf("%s, %s: relative L2 against FP32 math, worst tensor: 16-bit activations %.3g, FP32 activations "
                  "%.3g; between the two %.3g\n",
                  m.name, where.c_str(), worst_a, worst_b, worst_ab);
    }
  }
  // The two 16-bit ops on their own: 3 channels of 3 x 5 (odd) at channel offset 1 of 7, NCHW.
  const ScopedEnv nchw_ops("DOWNSCALE_CUDA_LAYOUT", "nchw");
  auto be = make_cuda_backend(0);
  ASSERT_TRUE(be->set_math(MathMode::kBf16));
  const Shape a{2, 3, 3, 5}, cat{2, 7, 3, 5};
  std::vector<uint16_t> av(size_t(a.size()) + 1);
  const uint16_t specials[] = {0x0000, 0x8000, 0xbf80, 0x7fc0, 0x0001, 0x8001, 0x7f80, 0xff80};
  for (size_t i = 0; i < size_t(a.size()); ++i) av[i] = i < 8 ? specials[i] : uint16_t(0x3f80u + i * 7 + (i % 3 ? 0x8000u : 0));
  Tensor at(*be, a, DType::kBf16), ct(*be, cat, DType::kBf16);
  be->copy_from_host(at.storage(), reinterpret_cast<const float*>(av.data()), storage_floats(a.size(), DType::kBf16));
  be->copy_channels16(a, reinterpret_cast<const uint16_t*>(at.storage()), cat, 1,
                      reinterpret_cast<uint16_t*>(ct.storage()));
  std::vector<uint16_t> cv(size_t(cat.size()) + 1);
  be->copy_to_host(reinterpret_cast<float*>(cv.data()), ct.storage(), storage_floats(cat.size(), DType::kBf16));
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 45; ++k) ASSERT_EQ(cv[size_t(s * 105 + 15 + k)], av[size_t(s * 45 + k)]) << s << " " << k;
  const auto dyv = random_values(size_t(a.size()), 5);
  Tensor dy(*be, a), dx(*be, a);
  dy.upload(dyv.data());
  be->relu_backward16(a.size(), reinterpret_cast<const uint16_t*>(at.storage()), dy.data(), dx.data());
  const auto dxv = dx.to_host();
  int zeros = 0;
  for (size_t i = 0; i < dxv.size(); ++i) {
    float want = 0;
    kernels::relu_backward16_at(0, kernels::Half16::kBf16, &av[i], &dyv[i], &want);
    ASSERT_EQ(dxv[i], want) << i;
    zeros += want == 0.0f;
  }
  EXPECT_GT(zeros, 8) << "the mask must have zeros for the comparison to mean something";
  // NHWC activations: each pixel's 3 channels at channels 1..3 of its 7; relu_backward16 refused
  // (a flat pass would pair an NHWC y with the NCHW gradient).
  const ScopedEnv nhwc_ops("DOWNSCALE_CUDA_LAYOUT", "nhwc");
  auto bn = make_cuda_backend(0);
  ASSERT_TRUE(bn->set_math(MathMode::kBf16));
  Tensor an(*bn, a, DType::kBf16), cn(*bn, cat, DType::kBf16);
  bn->copy_from_host(an.storage(), reinterpret_cast<const float*>(av.data()), storage_floats(a.size(), DType::kBf16));
  bn->fill(cn.storage(), storage_floats(cat.size(), DType::kBf16), 0.0f);
  bn->copy_channels16(a, reinterpret_cast<const uint16_t*>(an.storage()), cat, 1,
                      reinterpret_cast<uint16_t*>(cn.storage()));
  bn->copy_to_host(reinterpret_cast<float*>(cv.data()), cn.storage(), storage_floats(cat.size(), DType::kBf16));
  for (int64_t pix = 0; pix < 2 * 15; ++pix)
    for (int ch = 0; ch < 7; ++ch) {
      const uint16_t want = ch >= 1 && ch <= 3 ? av[size_t(pix * 3 + ch - 1)] : uint16_t(0);
      ASSERT_EQ(cv[size_t(pix * 7 + ch)], want) << "pixel " << pix << " channel " << ch;
    }
  EXPECT_THROW(bn->relu_backward16(a.size(), reinterpret_cast<const uint16_t*>(an.storage()), dy.data(), dx.data()),
               Error);
}

// Batches gathered from a split held on the GPU, and the loss added into a device accumulator
// (train.data_on_device, no per-step wait): the same rows as the CPU, the same loss sum.
TEST_F(ModelCuda, GatherRowsAndLossAccumulator) {
  const Shape split{5, 2, 3, 4};
  Pair src = random_pair(split, 1), index = pair(Shape{1, 1, 1, 3}, {4, 0, 4});
  Pair dst = random_pair(Shape{3, 2, 3, 4}, 2);
  cpu_->gather_rows(3, 24, index.cpu.data(), src.cpu.data(), dst.cpu.data());
  gpu_->gather_rows(3, 24, index.gpu.data(), src.gpu.data(), dst.gpu.data());
  EXPECT_EQ(dst.cpu.to_host(), dst.gpu.to_host());

  for (LossKind kind : {LossKind::kBernoulliGamma, LossKind::kGaussian, LossKind::kMse}) {
    const Shape s{3, loss_channels(kind), 6, 7};
    auto y = random_values(3 * 42, 2, 0.0f, 2.0f);
    std::vector<float> mask(42, 1.0f);
    for (size_t i = 0; i < 42; i += 4) mask[i] = 0.0f;
    y[5] = std::nanf("");
    std::vector<uint8_t> mask8(mask.begin(), mask.end());
    const int64_t valid = count_valid_points(mask8.data(), y.data(), 3, 42);
    // Bernoulli-Gamma's p channel is a probability (the net's sigmoid): in (0, 1), or log p is NaN.
    const bool bg = kind == LossKind::kBernoulliGamma;
    Pair o = random_pair(s, 1, bg ? 0.1f : -0.5f, bg ? 0.9f : 0.5f), t = pair(Shape{3, 1, 6, 7}, y),
         m = pair(Shape{1, 1, 6, 7}, mask),
         d = random_pair(s, 3), acc = pair(Shape{1, 1, 1, 4}, {0, 0, 0, 0});
    const double start[2] = {2.0, -1.0};
    acc.cpu.upload(reinterpret_cast<const float*>(start));
    acc.gpu.upload(reinterpret_cast<const float*>(start));
    for (int step = 0; step < 2; ++step) {
      masked_loss_accumulate(*cpu_, kind, o.cpu, t.cpu, m.cpu, valid, 3, step,
                             reinterpret_cast<double*>(acc.cpu.data()), &d.cpu);
      masked_loss_accumulate(*gpu_, kind, o.gpu, t.gpu, m.gpu, valid, 3, step,
                             reinterpret_cast<double*>(acc.gpu.data()), &d.gpu);
    }
    double a[2], b[2];
    acc.cpu.download(reinterpret_cast<float*>(a));
    acc.gpu.download(reinterpret_cast<float*>(b));
    const double want = 2.0 + 2 * 3 * masked_loss(*cpu_, kind, o.cpu, t.cpu, m.cpu, nullptr);
    // Two steps' means times their rows, added in double: the last bits differ from 2 x 3 x mean.
    EXPECT_NEAR(a[0], want, 1e-12 * std::abs(want)) << loss_name(kind);
    EXPECT_NEAR(b[0], want, 1e-9 * std::abs(want)) << loss_name(kind);
    EXPECT_EQ(b[1], -1.0) << loss_name(kind);
    expect_close(d, 1e-4, loss_name(kind) + " gradient");
  }
  EXPECT_GT(gpu_->free_bytes(), int64_t(1) << 20);
}

// Convolution with bias and ReLU as one op against the CPU's conv then ReLU: 3x3 and 5x5 'same'
// (cuDNN's own padding, where the fused call may run) and 4x4 'same' (explicit padding: never
// fused). Each way the forward may run a conv+bias+ReLU: cuDNN's fused call wherever the algorithm allows
// it (DOWNSCALE_CUDA_FUSE=1), never (0), and by timing both on the first call (unset, the
// default; that call's y is written by both during the timing, then again). A fresh backend per
// setting: the switch is read when the backend is made, the choice when its plan is.
TEST_F(ModelCuda, ConvBiasReluForward) {
  for (const char* fuse : {"1", "0", ""}) {
    const ScopedEnv env("DOWNSCALE_CUDA_FUSE", fuse);
    gpu_ = make_cuda_backend(0);
    ASSERT_TRUE(gpu_->set_math(MathMode::kFp32));
    for (int k : {3, 4, 5}) {
      const ConvDesc d = same_conv(Shape{2, 8, 12, 13}, 16, k);
      Pair x = random_pair(d.in, 1), w = random_pair(Shape{16, 8, k, k}, 2, -0.2f, 0.2f),
           b = random_pair(Shape{1, 16, 1, 1}, 3), y = random_pair(d.out(), 4);
      const std::string what = "conv+bias+relu " + std::to_string(k) + "x" + std::to_string(k) +
                               " DOWNSCALE_CUDA_FUSE='" + fuse + "'";
      cpu_->conv2d_relu_forward(d, x.cpu.data(), w.cpu.data(), b.cpu.data(), y.cpu.data());
      for (int call = 0; call < 2; ++call) {  // the first call (timed when unset) and a later one
        gpu_->conv2d_relu_forward(d, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data());
        expect_close(y, 1e-3, what + " call " + std::to_string(call + 1));
      }
    }
  }
}

// The fused upsample-conv forms (MNN's up1_conv1/up2_conv1 with their ReLU): the bias and ReLU in
// the phase interleave, and the backward's one masked de-interleave shared by the weight and data
// gradients (weights folded once), against the CPU backend. FP32 (set in SetUp); tolerance as
// Convolutions, 1e-3 of the scale. Both backwards get the CPU's forward output as y, so the ReLU
// masks are the same (an output within rounding of 0 may be cut on one side only). Without ReLU
// (y null) and without dx (the first layer) too.
TEST_F(ModelCuda, UpsampleConvReluForwardBackwardMatchesCpu) {
  struct Case {
    int f, k, in_c, out_c, w;  // w: the small width (53: big rows of 106 and 159 columns, the row
                               // kernels' lanes looping past 32 and not a multiple of it)
  };
  for (const Case& c : {Case{2, 8, 12, 20, 7}, Case{2, 5, 10, 10, 7}, Case{3, 3, 4, 6, 7}, Case{2, 8, 6, 5, 53},
                        Case{3, 3, 4, 3, 53}}) {
    ConvDesc d;
    d.in = Shape{2, c.in_c, 5 * c.f, c.w * c.f};
    d.out_c = c.out_c;
    d.kh = d.kw = c.k;
    same_padding(c.k, d.pad_top, d.pad_bottom);
    same_padding(c.k, d.pad_left, d.pad_right);
    const Shape small{2, c.in_c, 5, c.w}, ws{c.out_c, c.in_c, c.k, c.k}, bs{1, c.out_c, 1, 1}, os = d.out();
    for (bool relu : {true, false}) {
      const std::string what = "x" + std::to_string(c.f) + " then " + std::to_string(c.k) + "x" + std::to_string(c.k) +
                               " width " + std::to_string(c.w) + (relu ? " +relu" : "");
      Pair x = random_pair(small, 1), w = random_pair(ws, 2, -0.2f, 0.2f), b = random_pair(bs, 3),
           y = random_pair(os, 4), dy = random_pair(os, 5), dx = random_pair(small, 6), dw = random_pair(ws, 7),
           db = random_pair(bs, 8);
      const int64_t sc = std::max(cpu_->upsample_conv2d_scratch(d, c.f), cpu_->upsample_conv2d_backward_scratch(d, c.f, relu));
      const int64_t sg = std::max(gpu_->upsample_conv2d_scratch(d, c.f), gpu_->upsample_conv2d_backward_scratch(d, c.f, relu));
      EXPECT_EQ(sg, 0) << what;  // the polyphase path takes its buffers from the caching allocator
      Tensor scratch_c(*cpu_, {1, 1, 1, int(std::max<int64_t>(sc, 1))}), scratch_g(*gpu_, {1, 1, 1, 1});
      if (relu) {
        cpu_->upsample_conv2d_relu_forward(d, c.f, x.cpu.data(), w.cpu.data(), b.cpu.data(), y.cpu.data(), scratch_c.data());
        gpu_->upsample_conv2d_relu_forward(d, c.f, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data(), scratch_g.data());
      } else {
        cpu_->upsample_conv2d_forward(d, c.f, x.cpu.data(), w.cpu.data(), b.cpu.data(), y.cpu.data(), scratch_c.data());
        gpu_->upsample_conv2d_forward(d, c.f, x.gpu.data(), w.gpu.data(), b.gpu.data(), y.gpu.data(), scratch_g.data());
      }
      expect_close(y, 1e-3, what + " forward");
      const auto y_cpu = y.cpu.to_host();
      if (relu) {
        int cut = 0;
        for (float v : y_cpu) cut += v == 0.0f;
        EXPECT_GT(cut, 0) << what;
      }
      y.gpu.upload(y_cpu.data());
      const float* yc = relu ? y.cpu.data() : nullptr;
      const float* yg = relu ? y.gpu.data() : nullptr;
      cpu_->upsample_conv2d_backward(d, c.f, x.cpu.data(), yc, dy.cpu.data(), w.cpu.data(), dx.cpu.data(), dw.cpu.data(),
                                     db.cpu.data(), scratch_c.data());
      gpu_->upsample_conv2d_backward(d, c.f, x.gpu.data(), yg, dy.gpu.data(), w.gpu.data(), dx.gpu.data(), dw.gpu.data(),
                                     db.gpu.data(), scratch_g.data());
      expect_close(dx, 1e-3, what + " backward data");
      expect_close(dw, 1e-3, what + " backward weights");
      expect_close(db, 1e-3, what + " backward bias");
      // Without dx: the same weight gradients, dx left alone.
      const auto dx_before = dx.gpu.to_host();
      gpu_->upsample_conv2d_backward(d, c.f, x.gpu.data(), yg, dy.gpu.data(), w.gpu.data(), nullptr, dw.gpu.data(),
                                     db.gpu.data(), scratch_g.data());
      EXPECT_EQ(dx.gpu.to_host(), dx_before) << what;
      expect_close(dw, 1e-3, what + " backward weights without dx");
    }
  }
}

// --- the benchmark nets' ops (issue 15): strided, bias-free, non-square convolutions; padded
// pooling; softmax cross-entropy; the Add, GlobalAveragePool and flagged BatchNorm layers ---

// Stride 2 with TF 'same' (asymmetric: cuDNN's explicit-pad copy path) and explicit symmetric
// padding (cuDNN's own), 1x1/2 shortcuts, 1x7/7x1; without a bias (b and db null: no add, no
// bias gradient) and with one; plain and through conv2d_relu_forward (fused only with a bias).
// Tolerance as Convolutions: 1e-3 of the output's scale.
TEST_F(ModelCuda, StridedBiasFreeNonSquareConvolutions) {
  struct Case {
    int c, h, w, oc, kh, kw, stride, pt, pb, pl, pr;
  };
  for (const Case& k : {Case{3, 15, 14, 8, 7, 7, 2, 2, 3, 2, 3}, Case{3, 15, 14, 8, 7, 7, 2, 3, 3, 3, 3},
                        Case{6, 9, 8, 5, 1, 1, 2, 0, 0, 0, 0}, Case{4, 9, 11, 6, 1, 7, 1, 0, 0, 3, 3},
                        Case{4, 11, 9, 6, 7, 1, 1, 3, 3, 0, 0}, Case{5, 10, 10, 7, 3, 3, 2, 0, 1, 0, 1},
                        Case{5, 11, 11, 7, 3, 3, 2, 0, 0, 0, 0}}) {
    const ConvDesc d = test::conv_desc({2, k.c, k.h, k.w}, k.oc, k.kh, k.kw, k.stride, k.pt, k.pb, k.pl, k.pr);
    const Shape o = d.out();
    Pair x = random_pair(d.in, 1), w = random_pair(Shape{k.oc, k.c, k.kh, k.kw}, 2),
         b = random_pair(Shape{1, k.oc, 1, 1}, 3);
    Pair y = random_pair(o, 4), dy = random_pair(o, 5), dx = random_pair(d.in, 6);
    Pair dw = random_pair(w.cpu.shape(), 7), db = random_pair(b.cpu.shape(), 8);
    for (bool bias : {false, true}) {
      const std::string what = "conv " + std::to_string(k.kh) + "x" + std::to_string(k.kw) + "/" +
                               std::to_string(k.stride) + " pads " + std::to_string(k.pt) + std::to_string(k.pb) +
                               std::to_string(k.pl) + std::to_string(k.pr) + (bias ? " bias" : " no bias");
      const float* bc = bias ? b.cpu.data() : nullptr;
      const float* bg = bias ? b.gpu.data() : nullptr;
      cpu_->conv2d_forward(d, x.cpu.data(), w.cpu.data(), bc, y.cpu.data());
      gpu_->conv2d_forward(d, x.gpu.data(), w.gpu.data(), bg, y.gpu.data());
      expect_close(y, 1e-3, what + " forward");
      cpu_->conv2d_relu_forward(d, x.cpu.data(), w.cpu.data(), bc, y.cpu.data());
      gpu_->conv2d_relu_forward(d, x.gpu.data(), w.gpu.data(), bg, y.gpu.data());
      expect_close(y, 1e-3, what + " forward + ReLU");
      cpu_->conv2d_backward_data(d, dy.cpu.data(), w.cpu.data(), dx.cpu.data());
      gpu_->conv2d_backward_data(d, dy.gpu.data(), w.gpu.data(), dx.gpu.data());
      expect_close(dx, 1e-3, what + " backward data");
      cpu_->conv2d_backward_weights(d, x.cpu.data(), dy.cpu.data(), dw.cpu.data(), bias ? db.cpu.data() : nullptr);
      gpu_->conv2d_backward_weights(d, x.gpu.data(), dy.gpu.data(), dw.gpu.data(), bias ? db.gpu.data() : nullptr);
      expect_close(dw, 1e-3, what + " backward weights");
      if (bias) expect_close(db, 1e-3, what + " backward bias");
    }
  }
}

// Padded 3x3 pooling, strides 1 and 2, symmetric and TF-'same' (0 before, 1 after) padding: the
// GPU runs model/kernels/pooling.h, the CPU oneDNN. Same sums in another order: 1e-5.
TEST_F(ModelCuda, PaddedPooling) {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAverage})
    for (int stride : {1, 2})
      for (auto [before, after] : {std::pair{1, 1}, std::pair{0, 1}}) {
        PoolDesc d;
        d.in = Shape{2, 3, 9, 10};
        d.k = 3;
        d.stride = stride;
        d.kind = kind;
        d.pad_top = d.pad_left = before;
        d.pad_bottom = d.pad_right = after;
        const std::string what = std::string(kind == PoolKind::kMax ? "max" : "avg") + " pool 3/" +
                                 std::to_string(stride) + " pad " + std::to_string(before) + std::to_string(after);
        expect_pool_matches_cpu(d, what);
      }
}

// 1000 classes, logits spread over +-20: the same row body on both sides, exp/log in double;
// the mean agrees to 1e-9 relative, the gradient to 1e-5.
TEST_F(ModelCuda, SoftmaxCrossEntropy) {
  const int n = 5, k = 1000;
  Pair z = random_pair(Shape{n, k, 1, 1}, 1, -20.0f, 20.0f);
  Pair labels = pair(Shape{n, 1, 1, 1}, {0, 999, 17, 500, 3});
  Pair dz = random_pair(Shape{n, k, 1, 1}, 2);
  const double lc = softmax_cross_entropy(*cpu_, z.cpu, labels.cpu, &dz.cpu);
  const double lg = softmax_cross_entropy(*gpu_, z.gpu, labels.gpu, &dz.gpu);
  EXPECT_NEAR(lg, lc, 1e-9 * std::abs(lc));
  expect_close(dz, 1e-5, "softmax cross-entropy gradient");
  EXPECT_NEAR(softmax_cross_entropy(*gpu_, z.gpu, labels.gpu, nullptr), lc, 1e-9 * std::abs(lc));
  Pair bad = pair(Shape{n, 1, 1, 1}, {0, 1, 1000, 2, 3});
  EXPECT_THROW(softmax_cross_entropy(*gpu_, z.gpu, bad.gpu, nullptr), Error);
  // Without a wait (the benchmark's steps): the same mean into the loss record, the same gradient;
  // a label outside [0, k) makes the mean NaN and records its step.
  LossAccumulator acc(*gpu_);
  Pair dz2 = random_pair(Shape{n, k, 1, 1}, 3);
  softmax_cross_entropy_accumulate(*gpu_, z.gpu, labels.gpu, &dz2.gpu, 1, acc.data());
  softmax_cross_entropy_accumulate(*gpu_, z.gpu, labels.gpu, nullptr, 2, acc.data());
  auto rec = acc.read();
  EXPECT_NEAR(rec[0], 2 * lc, 2e-9 * std::abs(lc));
  EXPECT_EQ(rec[1], -1.0);
  dz2.cpu.upload(dz.cpu.to_host().data());
  expect_close(dz2, 1e-5, "softmax cross-entropy gradient without a wait");
  softmax_cross_entropy_accumulate(*gpu_, z.gpu, bad.gpu, nullptr, 3, acc.data());
  rec = acc.read();
  EXPECT_TRUE(std::isnan(rec[0]));
  EXPECT_EQ(rec[1], 3.0);
}

// The layers built from existing ops, run on each backend: Add (copy + accumulate),
// GlobalAveragePool (a dense product with 1/hw), BatchNorm without scale / center (training
// forward, backward, inference). Tolerances as Dense / BatchNorm above.
TEST_F(ModelCuda, AddGlobalAveragePoolAndBatchNormFlags) {
  const Shape s{3, 4, 5, 6};
  Pair a = random_pair(s, 1), b = random_pair(s, 2), y = random_pair(s, 3), dy = random_pair(s, 4),
       da = random_pair(s, 5), db = random_pair(s, 6);
  Add add_c("add"), add_g("add");
  add_c.forward(*cpu_, {&a.cpu, &b.cpu}, y.cpu);
  add_g.forward(*gpu_, {&a.gpu, &b.gpu}, y.gpu);
  expect_close(y, 1e-6, "add forward");
  add_c.backward(*cpu_, {&a.cpu, &b.cpu}, y.cpu, dy.cpu, {&da.cpu, &db.cpu});
  add_g.backward(*gpu_, {&a.gpu, &b.gpu}, y.gpu, dy.gpu, {&da.gpu, &db.gpu});
  expect_close(da, 0, "add backward 0");
  expect_close(db, 0, "add backward 1");

  const Shape g{3, 4, 1, 1};
  Pair gy = random_pair(g, 7), gdy = random_pair(g, 8);
  GlobalAveragePool gap_c("gap"), gap_g("gap");
  gap_c.forward(*cpu_, {&a.cpu}, gy.cpu);
  gap_g.forward(*gpu_, {&a.gpu}, gy.gpu);
  expect_close(gy, 1e-5, "global average pool forward");
  gap_c.backward(*cpu_, {&a.cpu}, gy.cpu, gdy.cpu, {&da.cpu});
  gap_g.backward(*gpu_, {&a.gpu}, gy.gpu, gdy.gpu, {&da.gpu});
  expect_close(da, 1e-5, "global average pool backward");

  for (auto [scale, center] : {std::pair{false, true}, std::pair{true, false}, std::pair{false, false}}) {
    const std::string what = std::string("bn scale ") + (scale ? "on" : "off") + " center " + (center ? "on" : "off");
    BatchNorm bn_c("bn", *cpu_, 4, 0.99f, 1e-3f, scale, center), bn_g("bn", *gpu_, 4, 0.99f, 1e-3f, scale, center);
    std::mt19937_64 rng(1);
    bn_c.init(rng);
    bn_g.init(rng);
    const auto pc = bn_c.params(), pg = bn_g.params();
    ASSERT_EQ(pc.size(), size_t(scale) + size_t(center));
    for (size_t i = 0; i < pc.size(); ++i) {
      const auto v = random_values(4, 20 + i, 0.5f, 1.5f);
      pc[i].value->upload(v.data());
      pg[i].value->upload(v.data());
    }
    bn_c.forward(*cpu_, {&a.cpu}, y.cpu);
    bn_g.forward(*gpu_, {&a.gpu}, y.gpu);
    expect_close(y, 1e-4, what + " training forward");
    bn_c.backward(*cpu_, {&a.cpu}, y.cpu, dy.cpu, {&da.cpu});
    bn_g.backward(*gpu_, {&a.gpu}, y.gpu, dy.gpu, {&da.gpu});
    expect_close(da, 1e-3, what + " backward");
    for (size_t i = 0; i < pc.size(); ++i) {
      Pair grad{Tensor(*cpu_, Shape{1, 4, 1, 1}), Tensor(*gpu_, Shape{1, 4, 1, 1})};
      cpu_->copy(grad.cpu.data(), pc[i].grad->data(), 4);
      gpu_->copy(grad.gpu.data(), pg[i].grad->data(), 4);
      expect_close(grad, 1e-4, what + " " + pc[i].name);
    }
    bn_c.set_mode(ForwardMode{false});
    bn_g.set_mode(ForwardMode{false});
    bn_c.forward(*cpu_, {&a.cpu}, y.cpu);
    bn_g.forward(*gpu_, {&a.gpu}, y.gpu);
    expect_close(y, 1e-4, what + " inference");
  }
}

// The weight gradient by im2col + cuBLAS (cuda_wgrad_gemm.cu), forced on every plan with
// DOWNSCALE_CUDA_WGRAD_GEMM=1, and with DOWNSCALE_CUDA_WGRAD_GEMM_MB=1 (1 MiB a chunk) so the
// schedules run; in FP32/TF32: all five samples in one chunk with partials (3x3 on 9 x 11), two a
// chunk (2, 2, 1: 8 -> 5 channels 3x3 on 40 x 40), one a chunk accumulating dW directly (the 9x9
// branch shape), the 1x1 with no unrolling (in 16 bits it is unrolled, and 16-bit chunks hold
// twice the samples: 4 + 1 on 40 x 40); stride 2, Keras' even-kernel padding, the polyphase
// upsample+conv whose small 5x5 convolution goes through it, and Conv2D+ReLU's whole backward
// (conv2d_backward: the masked gradient, rounded once in 16 bits, read by the GEMM). FP32: 1e-3 of the scale, as
// Convolutions; TF32 (CUBLAS_COMPUTE_32F_FAST_TF32): 1e-2, as Tf32ConvolutionsStayWithinTf32Tolerance;
// BF16 / FP16 (16-bit unrolling and dY, FP32 sums) against the CPU's FP32: 2e-2 / 2e-3 of the
// largest magnitude, the 16-bit tolerances above.
TEST_F(ModelCuda, WeightGradientByGemmMatchesCpu) {
  // The GEMM forced, in 1 MiB chunks; the 16-bit layout pinned per run: NCHW in every mode, then
  // NHWC in BF16 (dY's rounded copy NHWC, the unrolling pixel-major; x FP32 NCHW here, a 16-bit
  // NHWC activation in DeviceCheckCuda's GEMM rows).
  ScopedEnv gemm("DOWNSCALE_CUDA_WGRAD_GEMM", "1"), chunk("DOWNSCALE_CUDA_WGRAD_GEMM_MB", "1"),
      act32("DOWNSCALE_CUDA_ACTIVATIONS16", "0");
  // BF16's other timed paths pinned off: the GEMM's weight gradient is what is checked, and a
  // padded plan's or an engine's lines would be read as the GEMM's.
  ScopedEnvs others({{"DOWNSCALE_CUDA_TF32_PASSES", "0"}, {"DOWNSCALE_CUDA_GRAPH", "0"}, {"DOWNSCALE_CUDA_PAD_CHANNELS", "0"}});
  struct Case {
    int c, h, w, oc, kh, kw, stride, pt, pb, pl, pr;
  };
  struct Run {
    MathMode math;
    const char* layout;
  };
  for (const Run& run : {Run{MathMode::kFp32, "nchw"}, Run{MathMode::kTf32, "nchw"}, Run{MathMode::kBf16, "nchw"},
                         Run{MathMode::kFp16, "nchw"}, Run{MathMode::kBf16, "nhwc"}}) {
    const MathMode math = run.math;
    LayoutEnv layout(run.layout);
    gpu_ = make_cuda_backend(0);  // reads the switches above
    ASSERT_TRUE(gpu_->set_math(math));
    const bool h16 = math == MathMode::kBf16 || math == MathMode::kFp16;
    const double tol = math == MathMode::kFp32 ? 1e-3 : math == MathMode::kTf32 ? 1e-2 : math == MathMode::kBf16 ? 2e-2 : 2e-3;
    const std::string mode = std::string(math == MathMode::kFp32   ? "fp32 "
                                         : math == MathMode::kTf32 ? "tf32 "
                                         : math == MathMode::kBf16 ? "bf16 "
                                                                   : "fp16 ") +
                             run.layout + " ";
    const auto check = [&](const Pair& p, const std::string& what) {
      if (h16)
        expect_close_to_scale(p.cpu.to_host(), p.gpu.to_host(), tol, what);
      else
        expect_close(p, tol, what);
    };
    ::testing::internal::CaptureStderr();  // each plan's line says the GEMM took its weight gradient
    for (const Case& k : {Case{3, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1}, Case{8, 40, 40, 5, 3, 3, 1, 1, 1, 1, 1},
                          Case{20, 15, 26, 50, 9, 9, 1, 4, 4, 4, 4}, Case{6, 9, 9, 7, 1, 1, 1, 0, 0, 0, 0},
                          Case{5, 12, 13, 6, 3, 3, 2, 0, 1, 0, 1}, Case{4, 8, 7, 6, 2, 2, 1, 0, 1, 0, 1}}) {
      const ConvDesc d = test::conv_desc({5, k.c, k.h, k.w}, k.oc, k.kh, k.kw, k.stride, k.pt, k.pb, k.pl, k.pr);
      const std::string what = mode + "conv " + d.in.str() + " -> " + std::to_string(k.oc) + " " +
                               std::to_string(k.kh) + "x" + std::to_string(k.kw) + "/" + std::to_string(k.stride);
      Pair x = random_pair(d.in, 1), dy = random_pair(d.out(), 5);
      Pair dw = random_pair(Shape{k.oc, k.c, k.kh, k.kw}, 7), db = random_pair(Shape{1, k.oc, 1, 1}, 8);
      for (int rep = 0; rep < 2; ++rep) {  // the second run reuses the plan, the workspace and the cache
        cpu_->conv2d_backward_weights(d, x.cpu.data(), dy.cpu.data(), dw.cpu.data(), db.cpu.data());
        gpu_->conv2d_backward_weights(d, x.gpu.data(), dy.gpu.data(), dw.gpu.data(), db.gpu.data());
        check(dw, what + " weights");
        expect_close(db, 1e-3, what + " bias");  // FP32 in every mode
      }
      if (k.kh != 3 || k.stride != 1 || k.c != 3) continue;
      // Conv2D+ReLU's whole backward on the first geometry: dy masked by [y > 0] (a ReLU output
      // with zeros), the mask and, in 16 bits, the rounding done once for both passes.
      std::vector<float> yv = random_values(size_t(d.out().size()), 9);
      for (float& v : yv) v = std::max(v, 0.0f);
      Pair y = pair(d.out(), yv), w = random_pair(Shape{k.oc, k.c, k.kh, k.kw}, 2), dx = random_pair(d.in, 6);
      Tensor sc(*cpu_, d.out()), sg(*gpu_, d.out());
      cpu_->conv2d_backward(d, x.cpu.data(), y.cpu.data(), dy.cpu.data(), w.cpu.data(), dx.cpu.data(), dw.cpu.data(),
                            db.cpu.data(), sc.data());
      gpu_->conv2d_backward(d, x.gpu.data(), y.gpu.data(), dy.gpu.data(), w.gpu.data(), dx.gpu.data(), dw.gpu.data(),
                            db.gpu.data(), sg.data());
      check(dw, what + " +relu weights");
      check(dx, what + " +relu data");
      expect_close(db, 1e-3, what + " +relu bias");
    }
    ConvDesc d;  // x2 then 8x8 'same' (MNN's up2_conv1): a 5x5 convolution on the small grid
    d.in = Shape{3, 12, 10, 14};
    d.out_c = 20;
    d.kh = d.kw = 8;
    same_padding(8, d.pad_top, d.pad_bottom);
    same_padding(8, d.pad_left, d.pad_right);
    const Shape small{3, 12, 5, 7}, ws{20, 12, 8, 8}, bs{1, 20, 1, 1};
    Pair x = random_pair(small, 1), w = random_pair(ws, 2, -0.2f, 0.2f), dy = random_pair(d.out(), 5),
         dx = random_pair(small, 6), dw = random_pair(ws, 7), db = random_pair(bs, 8);
    Tensor scratch_c(*cpu_, {1, 1, 1, int(std::max<int64_t>(cpu_->upsample_conv2d_backward_scratch(d, 2, false), 1))});
    Tensor scratch_g(*gpu_, {1, 1, 1, 1});
    cpu_->upsample_conv2d_backward(d, 2, x.cpu.data(), nullptr, dy.cpu.data(), w.cpu.data(), dx.cpu.data(),
                                   dw.cpu.data(), db.cpu.data(), scratch_c.data());
    gpu_->upsample_conv2d_backward(d, 2, x.gpu.data(), nullptr, dy.gpu.data(), w.gpu.data(), dx.gpu.data(),
                                   dw.gpu.data(), db.gpu.data(), scratch_g.data());
    check(dw, mode + "x2 then 8x8 weights");
    check(dx, mode + "x2 then 8x8 data");
    // Seven plans (the six convolutions, the polyphase's small one), each through the GEMM: out_c
    // 5 or more, as out_c <= 4 would take the narrow kernels instead. None fell back to cuDNN.
    const std::string err = ::testing::internal::GetCapturedStderr();
    int lines = 0;
    for (size_t at = 0; (at = err.find("weight gradient by im2col + cuBLAS (DOWNSCALE_CUDA_WGRAD_GEMM=1)", at)) !=
                        std::string::npos;
         ++at)
      ++lines;
    EXPECT_EQ(lines, 7) << mode << err;
    EXPECT_EQ(err.find("failed"), std::string::npos) << mode << err;
  }
}

}  // namespace
}  // namespace ds::model
