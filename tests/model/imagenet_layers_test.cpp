// The layers the image-classification benchmark nets (ResNet50/101, InceptionV3) need: strided,
// padded, bias-free and non-square convolutions, padded pooling, the residual Add, global average
// pooling, batch norm's scale/center flags and softmax cross-entropy. Forward values by hand or
// against the naive double-precision convolution (conv_reference.h); every backward against
// central finite differences (check_layer_gradients; tolerances in model_test_util.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "conv_reference.h"
#include "model/layers/add.h"
#include "model/layers/batch_norm.h"
#include "model/layers/conv2d.h"
#include "model/layers/global_average_pool.h"
#include "model/layers/pool2d.h"
#include "model/loss.h"
#include "model/loss_accumulator.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::make_tensor;
using test::random_tensor;

// n distinct values 0.05 apart in a shuffled order: a max pool's finite difference (eps 1e-2)
// then never swaps which element wins a window.
std::vector<float> distinct_values(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.05f * float(i) - 0.025f * float(n);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return v;
}

TEST(ModelImagenetLayers, SamePaddingFollowsTensorFlowForAnyStride) {
  int a = -1, b = -1;
  resolve_padding(Padding::kSame, 0, 224, 7, 2, a, b);  // ResNet's stem: out 112, total 5
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 3);
  resolve_padding(Padding::kSame, 0, 225, 3, 2, a, b);  // out 113, total 2
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 1);
  resolve_padding(Padding::kSame, 0, 56, 1, 2, a, b);  // 1x1 shortcut: none
  EXPECT_EQ(a + b, 0);
  resolve_padding(Padding::kSame, 0, 8, 4, 1, a, b);  // stride 1, even k: extra at the bottom
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  resolve_padding(Padding::kExplicit, 3, 224, 7, 2, a, b);
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 3);
  resolve_padding(Padding::kValid, 3, 224, 7, 2, a, b);
  EXPECT_EQ(a + b, 0);
}

struct ConvCase {
  int in_c, out_c, kh, kw, h, w;
  Conv2DOptions opt;
  Shape expect_out;
};

Conv2DOptions opts(int stride, Padding p, int pad, bool bias, bool relu = false) {
  Conv2DOptions o;
  o.stride = stride;
  o.padding = p;
  o.pad = pad;
  o.bias = bias;
  o.relu = relu;
  return o;
}

std::vector<ConvCase> conv_cases() {
  return {
      {2, 3, 7, 7, 11, 12, opts(2, Padding::kSame, 0, false), Shape{2, 3, 6, 6}},      // ResNet stem, 'same'
      {2, 3, 7, 7, 11, 12, opts(2, Padding::kExplicit, 3, true), Shape{2, 3, 6, 6}},   // torchvision's stem
      {4, 3, 1, 1, 9, 8, opts(2, Padding::kValid, 0, false), Shape{2, 3, 5, 4}},       // 1x1 shortcut
      {3, 5, 3, 3, 9, 10, opts(2, Padding::kValid, 0, true, true), Shape{2, 5, 4, 4}}, // Inception stem + ReLU
      {3, 4, 1, 7, 6, 9, opts(1, Padding::kSame, 0, false), Shape{2, 4, 6, 9}},        // Inception 1x7
      {3, 4, 7, 1, 9, 6, opts(1, Padding::kSame, 0, true), Shape{2, 4, 9, 6}},         // Inception 7x1
      {2, 3, 3, 3, 8, 8, opts(2, Padding::kSame, 0, false, true), Shape{2, 3, 4, 4}},  // even input, stride 2
  };
}

std::string conv_name(const ConvCase& c) {
  return std::to_string(c.kh) + "x" + std::to_string(c.kw) + "/s" + std::to_string(c.opt.stride) + " pad" +
         std::to_string(int(c.opt.padding)) + (c.opt.bias ? " bias" : "") + (c.opt.relu ? " relu" : "");
}

// Forward against the naive double convolution (oneDNN's sums differ in order: 1e-5 of values
// of order 1 over at most 3*49 products); bias-free layers have no bias parameter.
TEST(ModelImagenetLayers, StridedPaddedConvForwardMatchesReference) {
  auto be = make_cpu_backend(1);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(conv_name(c));
    Conv2D conv("c", *be, c.in_c, c.out_c, c.kh, c.kw, c.opt);
    std::mt19937_64 rng(1);
    conv.init(rng);
    if (c.opt.bias) conv.bias().upload(test::random_values(size_t(c.out_c), 2).data());
    const Shape in{2, c.in_c, c.h, c.w};
    ASSERT_EQ(conv.output_shape({in}), c.expect_out);
    EXPECT_EQ(conv.parameter_count(), int64_t(c.out_c) * c.in_c * c.kh * c.kw + (c.opt.bias ? c.out_c : 0));
    EXPECT_EQ(conv.params().size(), c.opt.bias ? 2u : 1u);
    Tensor x = random_tensor(*be, in, 3);
    Tensor y(*be, c.expect_out);
    conv.forward(*be, {&x}, y);
    const std::vector<float> b = c.opt.bias ? conv.bias().to_host() : std::vector<float>(size_t(c.out_c), 0.0f);
    const auto ref = test::naive_conv(conv.desc(in), x.to_host(), conv.weights().to_host(), b);
    const auto got = y.to_host();
    for (size_t i = 0; i < ref.size(); ++i) {
      const double want = c.opt.relu ? std::max(ref[i], 0.0) : ref[i];
      ASSERT_NEAR(got[i], want, 1e-5 * std::max(1.0, std::abs(want))) << "at " << i;
    }
  }
}

TEST(ModelImagenetLayers, StridedPaddedConvBackward) {
  auto be = make_cpu_backend(1);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(conv_name(c));
    Conv2D conv("c", *be, c.in_c, c.out_c, c.kh, c.kw, c.opt);
    std::mt19937_64 rng(4);
    conv.init(rng);
    if (c.opt.bias) conv.bias().upload(test::random_values(size_t(c.out_c), 5).data());
    // The fused ReLU's kink is at the pre-activation: finite differences across it are wrong, so
    // with a ReLU the input is redrawn until every pre-activation is at least 0.01 from 0 (a
    // perturbation of 1e-2 moves one by at most 1e-2 * max|w|, |w| < 0.37 under Glorot here).
    const Shape in{2, c.in_c, c.h, c.w};
    const std::vector<float> b = c.opt.bias ? conv.bias().to_host() : std::vector<float>(size_t(c.out_c), 0.0f);
    uint64_t seed = 6;
    for (; c.opt.relu; ++seed) {
      const auto pre = test::naive_conv(conv.desc(in), test::random_values(size_t(in.size()), seed),
                                        conv.weights().to_host(), b);
      if (std::all_of(pre.begin(), pre.end(), [](double v) { return std::abs(v) >= 0.01; })) break;
      ASSERT_LT(seed, 200u) << "no input without a pre-activation near 0";
    }
    Tensor x = random_tensor(*be, in, seed);
    test::check_layer_gradients(*be, conv, {&x});
  }
}

// 3x3 windows, stride 2, 'same' on a 4x4 input: out 2x2, total padding 1, all at the bottom/right.
// The average divides by the real cells (4 at the corner window, not 9); max ignores the padding
// even where every real value is negative (the explicit case below).
TEST(ModelImagenetLayers, PaddedPoolForwardByHand) {
  auto be = make_cpu_backend(1);
  Tensor x = make_tensor(*be, Shape{1, 1, 4, 4}, {1, 2, 3, 4,  //
                                                  5, 6, 7, 8,  //
                                                  9, 10, 11, 12,  //
                                                  -13, -14, -15, -16});
  Pool2D mx("mx", PoolKind::kMax, 3, 2, Padding::kSame), av("av", PoolKind::kAverage, 3, 2, Padding::kSame);
  ASSERT_EQ(mx.output_shape({x.shape()}), (Shape{1, 1, 2, 2}));
  Tensor y(*be, Shape{1, 1, 2, 2});
  mx.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{11, 12, 11, 12}));
  av.forward(*be, {&x}, y);
  const std::vector<float> want{(1 + 2 + 3 + 5 + 6 + 7 + 9 + 10 + 11) / 9.0f, (3 + 4 + 7 + 8 + 11 + 12) / 6.0f,
                                (9 + 10 + 11 - 13 - 14 - 15) / 6.0f, (11 + 12 - 15 - 16) / 4.0f};
  const auto got = y.to_host();
  // Averages of small integers (order 10) in float: an ulp or two, 1e-6.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;

  // Explicit padding 1 (torchvision's 3x3/2 max pool) on an all-negative plane: never 0.
  Tensor neg = make_tensor(*be, Shape{1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  Pool2D ex("ex", PoolKind::kMax, 3, 2, Padding::kExplicit, 1);
  ASSERT_EQ(ex.output_shape({neg.shape()}), (Shape{1, 1, 2, 2}));
  ex.forward(*be, {&neg}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{-1, -2, -4, -5}));
  EXPECT_THROW(Pool2D("bad", PoolKind::kMax, 3, 1, Padding::kExplicit, 3), Error);
}

TEST(ModelImagenetLayers, PaddedPoolBackward) {
  auto be = make_cpu_backend(1);
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAverage})
    for (int stride : {1, 2})
      for (Padding p : {Padding::kSame, Padding::kExplicit}) {
        SCOPED_TRACE(std::string(kind == PoolKind::kMax ? "max" : "avg") + " s" + std::to_string(stride) + " pad" +
                     std::to_string(int(p)));
        Pool2D pool("p", kind, 3, stride, p, 1);
        const Shape s{2, 2, 7, 6};
        Tensor x = make_tensor(*be, s, distinct_values(size_t(s.size()), 7));
        test::check_layer_gradients(*be, pool, {&x});
      }
}

TEST(ModelImagenetLayers, AddSumsAndPassesGradients) {
  auto be = make_cpu_backend(1);
  Add add("add");
  EXPECT_EQ(add.type(), "Add");
  const Shape s{2, 3, 4, 5};
  Tensor a = random_tensor(*be, s, 1), b = random_tensor(*be, s, 2), c = random_tensor(*be, s, 3);
  ASSERT_EQ(add.output_shape({s, s, s}), s);
  Tensor y(*be, s);
  add.forward(*be, {&a, &b, &c}, y);
  const auto ya = a.to_host(), yb = b.to_host(), yc = c.to_host(), got = y.to_host();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], ya[i] + yb[i] + yc[i]);
  test::check_layer_gradients(*be, add, {&a, &b, &c});  // every input's gradient, as the forward takes three
  EXPECT_THROW(add.output_shape({s}), Error);
  EXPECT_THROW(add.output_shape({s, Shape{2, 3, 4, 4}}), Error);
}

TEST(ModelImagenetLayers, GlobalAveragePool) {
  auto be = make_cpu_backend(1);
  GlobalAveragePool gap("gap");
  EXPECT_EQ(gap.type(), "GlobalAveragePooling2D");
  Tensor x = make_tensor(*be, Shape{2, 2, 2, 3}, {1, 2, 3, 4, 5, 6,  //
                                                  0, 0, 0, 0, 0, 6,  //
                                                  -1, -1, -1, -1, -1, -1,  //
                                                  2, 4, 6, 8, 10, 12});
  ASSERT_EQ(gap.output_shape({x.shape()}), (Shape{2, 2, 1, 1}));
  Tensor y(*be, Shape{2, 2, 1, 1});
  gap.forward(*be, {&x}, y);
  const auto got = y.to_host();
  const std::vector<float> want{3.5f, 1.0f, -1.0f, 7.0f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;  // exact in float but for the 1/hw product
  test::check_layer_gradients(*be, gap, {&x});
  // Another plane size: the 1/hw vector follows. Its gradients are |R|/35 <= 0.029, under the
  // default absolute 1e-2 a zero would pass a quarter of them: 1e-3 here (the float noise of the
  // quotient is ~1e-5, check_layer_gradients).
  Tensor x2 = random_tensor(*be, Shape{3, 4, 5, 7}, 9);
  test::check_layer_gradients(*be, gap, {&x2}, 1e-2, 1e-3);
}

// Keras' flags: without scale gamma stays 1 and is no parameter; without center beta stays 0.
TEST(ModelImagenetLayers, BatchNormScaleCenterFlags) {
  auto be = make_cpu_backend(1);
  const Shape s{3, 2, 4, 5};
  Tensor x = random_tensor(*be, s, 11, -2.0f, 3.0f);
  for (bool scale : {true, false})
    for (bool center : {true, false}) {
      SCOPED_TRACE(std::string("scale ") + (scale ? "on" : "off") + ", center " + (center ? "on" : "off"));
      BatchNorm bn("bn", *be, 2, 0.99f, 1e-3f, scale, center);
      std::mt19937_64 rng(1);
      bn.init(rng);
      EXPECT_EQ(bn.parameter_count(), (scale ? 2 : 0) + (center ? 2 : 0));
      EXPECT_EQ(bn.params().size(), size_t(scale) + size_t(center));
      EXPECT_EQ(bn.buffers().size(), 2u);
      // Trainable ones moved away from their defaults, so a flag that is ignored shows.
      for (Param& p : bn.params()) p.value->upload(test::random_values(2, 12, 0.5f, 1.5f).data());
      bn.set_mode(ForwardMode{true});
      test::check_layer_gradients(*be, bn, {&x});
      // Inference with the defaults' running statistics (mean 0, var 1 after init; training above
      // moved them, so reset): y = gamma x / sqrt(1 + eps) + beta, gamma/beta fixed when off.
      bn.running_mean().upload(std::vector<float>{0, 0}.data());
      bn.running_var().upload(std::vector<float>{1, 1}.data());
      bn.set_mode(ForwardMode{false});
      Tensor y(*be, s);
      bn.forward(*be, {&x}, y);
      std::vector<float> gamma{1, 1}, beta{0, 0};
      for (Param& p : bn.params()) (p.name == "bn/gamma" ? gamma : beta) = p.value->to_host();
      const auto xh = x.to_host(), yh = y.to_host();
      for (size_t i = 0; i < xh.size(); ++i) {
        const int c = int(i / 20 % 2);
        // Float values up to ~5: a few ulps (~1e-6); 1e-5 fails any flag ignored (changes of O(0.5)).
        ASSERT_NEAR(yh[i], gamma[c] * xh[i] / std::sqrt(1.001) + beta[c], 1e-5) << i;
      }
    }
}

// K = 3, one row: loss = log(e^1 + e^2 + e^3) - z[label], gradient softmax - onehot (over N = 2
// rows, halved). A huge shift of the logits changes nothing (stability).
TEST(ModelImagenetLayers, SoftmaxCrossEntropyClosedForm) {
  auto be = make_cpu_backend(1);
  for (float shift : {0.0f, 1e4f, -1e4f}) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    Tensor z = make_tensor(*be, Shape{2, 3, 1, 1}, {1 + shift, 2 + shift, 3 + shift, shift, shift, shift});
    Tensor labels = make_tensor(*be, Shape{2, 1, 1, 1}, {0, 2});
    Tensor dz(*be, Shape{2, 3, 1, 1});
    const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
    const double want = ((lse - 1.0) + std::log(3.0)) / 2;
    // Tolerance: logits of 1e4 in float carry 1e-3 absolute rounding (ulp of 1e4), no more.
    const double tol = shift == 0 ? 1e-6 : 2e-3;
    EXPECT_NEAR(softmax_cross_entropy(*be, z, labels, &dz), want, tol);
    const auto g = dz.to_host();
    const double sm0 = std::exp(1.0 - lse), sm1 = std::exp(2.0 - lse), sm2 = std::exp(3.0 - lse);
    const std::vector<double> want_g{(sm0 - 1) / 2, sm1 / 2, sm2 / 2, 1.0 / 6, 1.0 / 6, (1.0 / 3 - 1) / 2};
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(g[i], want_g[i], shift == 0 ? 1e-6 : 2e-3) << i;
    EXPECT_NEAR(softmax_cross_entropy(*be, z, labels, nullptr), want, tol);
  }
}

// 1000 classes, 3 rows, against central differences of the mean loss on a sample of logits
// (each row's label, its largest logit and others). The loss is smooth; in double with eps 1e-2
// on logits of order 1 the truncation error is ~eps^2 |f'''| ~ 1e-5 / N, the float rounding of the
// perturbed logit ~1e-7 / eps ~ 1e-5 relative: tol 1e-4 absolute on gradients of order 1e-3..0.3.
TEST(ModelImagenetLayers, SoftmaxCrossEntropyFiniteDifferences) {
  auto be = make_cpu_backend(1);
  const int n = 3, k = 1000;
  std::vector<float> zh = test::random_values(size_t(n) * k, 21, -3.0f, 3.0f);
  const std::vector<float> lh{7, 999, 0};
  zh[7] = 5.0f;  // row 0's label is its likely class: a gradient near -1/N + p
  Tensor z = make_tensor(*be, Shape{n, k, 1, 1}, zh), labels = make_tensor(*be, Shape{n, 1, 1, 1}, lh);
  Tensor dz(*be, Shape{n, k, 1, 1});
  softmax_cross_entropy(*be, z, labels, &dz);
  const auto g = dz.to_host();
  // Each row's gradient sums to 0 (softmax sums to 1, onehot to 1).
  for (int r = 0; r < n; ++r) {
    double s = 0;
    for (int j = 0; j < k; ++j) s += g[size_t(r) * k + j];
    EXPECT_NEAR(s, 0.0, 1e-6) << "row " << r;
  }
  const double eps = 1e-2;
  for (int idx : {7, 8, 500, 1000 + 999, 1000 + 3, 2000, 2000 + 640, 2999}) {
    std::vector<float> v = zh;
    v[size_t(idx)] = zh[size_t(idx)] + float(eps);
    z.upload(v.data());
    const double lp = softmax_cross_entropy(*be, z, labels, nullptr);
    v[size_t(idx)] = zh[size_t(idx)] - float(eps);
    z.upload(v.data());
    const double lm = softmax_cross_entropy(*be, z, labels, nullptr);
    EXPECT_NEAR(g[size_t(idx)], (lp - lm) / (2 * eps), 1e-4) << "logit " << idx;
  }
}

// The loss without a wait (the benchmark's steps) adds the same mean into the loss record, step
// after step, with the same gradient; a non-finite mean records its step. Exact: the CPU default
// runs softmax_cross_entropy itself and adds mean x n / n in double (rounding at most 1 ulp).
TEST(ModelImagenetLayers, SoftmaxCrossEntropyAccumulatesWithoutAWait) {
  auto be = make_cpu_backend(1);
  Tensor z = random_tensor(*be, Shape{3, 10, 1, 1}, 4), labels = make_tensor(*be, Shape{3, 1, 1, 1}, {9, 0, 4});
  Tensor dz(*be, Shape{3, 10, 1, 1}), dz_acc(*be, Shape{3, 10, 1, 1});
  const double want = softmax_cross_entropy(*be, z, labels, &dz);
  LossAccumulator acc(*be);
  softmax_cross_entropy_accumulate(*be, z, labels, &dz_acc, 1, acc.data());
  softmax_cross_entropy_accumulate(*be, z, labels, nullptr, 2, acc.data());
  auto rec = acc.read();
  EXPECT_NEAR(rec[0], 2 * want, 1e-15 * want);
  EXPECT_EQ(rec[1], -1.0);
  EXPECT_EQ(dz.to_host(), dz_acc.to_host());
  std::vector<float> huge = z.to_host();
  huge[3] = std::numeric_limits<float>::infinity();  // row 0: inf - inf in its softmax
  z.upload(huge.data());
  softmax_cross_entropy_accumulate(*be, z, labels, nullptr, 3, acc.data());
  rec = acc.read();
  EXPECT_FALSE(std::isfinite(rec[0]));
  EXPECT_EQ(rec[1], 3.0);
  Tensor bad = make_tensor(*be, Shape{3, 1, 1, 1}, {9, 10, 4});
  EXPECT_THROW(softmax_cross_entropy_accumulate(*be, z, bad, nullptr, 4, acc.data()), Error);
}

TEST(ModelImagenetLayers, SoftmaxCrossEntropyRejectsBadInput) {
  auto be = make_cpu_backend(1);
  Tensor z = random_tensor(*be, Shape{2, 4, 1, 1}, 1);
  for (float bad : {4.0f, -1.0f, 1.5f, std::nanf("")}) {
    Tensor labels = make_tensor(*be, Shape{2, 1, 1, 1}, {0, bad});
    EXPECT_THROW(softmax_cross_entropy(*be, z, labels, nullptr), Error) << bad;
  }
  Tensor labels = make_tensor(*be, Shape{2, 1, 1, 1}, {0, 1});
  Tensor wrong(*be, Shape{2, 4, 2, 1});
  EXPECT_THROW(softmax_cross_entropy(*be, wrong, labels, nullptr), Error);
  Tensor wrong_labels(*be, Shape{3, 1, 1, 1});
  EXPECT_THROW(softmax_cross_entropy(*be, z, wrong_labels, nullptr), Error);
}

}  // namespace
}  // namespace ds::model
