// UpsampleConv2D and Backend::upsample_conv2d_*: nearest upsampling then a 'same' conv, which the
// CPU backend runs as one polyphase convolution on the small input. Checked against the naive
// loops on the upsampled input (forward, and backward through the upsampling's adjoint), for the
// CPU override and Backend's plain default, and the layer against finite differences. The forms
// with the ReLU inside (upsample_conv2d_relu_forward, upsample_conv2d_backward) against the same
// backend's plain ops composed with its ReLU ops, and the relu layer against UpsampleConv2D then
// ReLU and against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "conv_reference.h"
#include "model/backend.h"
#include "model/layers/relu.h"
#include "model/layers/upsample_conv2d.h"
#include "fused_relu_check.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::random_values;

struct UpCase {
  int n, in_c, h, w, out_c, kh, kw, factor;
  bool same;
};
// Readable test names in ctest instead of the struct's bytes.
void PrintTo(const UpCase& c, std::ostream* os) {
  *os << "n" << c.n << "_c" << c.in_c << "x" << c.h << "x" << c.w << "_o" << c.out_c << "_k" << c.kh << "x" << c.kw
      << "_up" << c.factor << (c.same ? "_same" : "_valid");
}

class ModelUpsampleConv2D : public ::testing::TestWithParam<std::tuple<UpCase, bool>> {};

// The convolution after the upsampling: its input is the upsampled shape.
ConvDesc upsampled_desc(const UpCase& c) {
  ConvDesc d;
  d.in = Shape{c.n, c.in_c, c.h * c.factor, c.w * c.factor};
  d.out_c = c.out_c;
  d.kh = c.kh;
  d.kw = c.kw;
  if (c.same) {
    same_padding(c.kh, d.pad_top, d.pad_bottom);
    same_padding(c.kw, d.pad_left, d.pad_right);
  }
  return d;
}

// Tolerance: as conv2d_test.cpp's layout test, 1e-6 per summed product; the folded kernel adds
// up to f*f taps before multiplying, which changes only the rounding, not the count's order.
TEST_P(ModelUpsampleConv2D, MatchesUpsampleThenNaiveConv) {
  const auto [c, use_default] = GetParam();
  auto be = make_cpu_backend(2);
  const Shape small{c.n, c.in_c, c.h, c.w};
  const ConvDesc d = upsampled_desc(c);
  const Shape os = d.out();
  const auto xv = random_values(size_t(small.size()), 21);
  const auto wv = random_values(size_t(c.out_c) * c.in_c * c.kh * c.kw, 22);
  const auto bv = random_values(size_t(c.out_c), 23), dyv = random_values(size_t(os.size()), 24);
  Tensor x = test::make_tensor(*be, small, xv), w = test::make_tensor(*be, Shape{c.out_c, c.in_c, c.kh, c.kw}, wv);
  Tensor b = test::make_tensor(*be, Shape{1, c.out_c, 1, 1}, bv), dy = test::make_tensor(*be, os, dyv);
  Tensor y(*be, os), dx(*be, small), dw(*be, w.shape()), db(*be, b.shape());
  if (use_default) {  // Backend's composition, which the CUDA backend runs
    Tensor s(*be, Shape{1, 1, 1, int(be->Backend::upsample_conv2d_scratch(d, c.factor))});
    be->Backend::upsample_conv2d_forward(d, c.factor, x.data(), w.data(), b.data(), y.data(), s.data());
    be->Backend::upsample_conv2d_backward_data(d, c.factor, dy.data(), w.data(), dx.data(), s.data());
    be->Backend::upsample_conv2d_backward_weights(d, c.factor, x.data(), dy.data(), dw.data(), db.data(), s.data());
  } else {
    // The CPU's polyphase path asks for no scratch; its 'valid' fallback (the last case) does.
    EXPECT_EQ(be->upsample_conv2d_scratch(d, c.factor) == 0, c.same);
    Tensor s(*be, Shape{1, 1, 1, int(be->upsample_conv2d_scratch(d, c.factor))});
    be->upsample_conv2d_forward(d, c.factor, x.data(), w.data(), b.data(), y.data(), s.data());
    be->upsample_conv2d_backward_data(d, c.factor, dy.data(), w.data(), dx.data(), s.data());
    be->upsample_conv2d_backward_weights(d, c.factor, x.data(), dy.data(), dw.data(), db.data(), s.data());
  }

  const auto big_x = test::upsample_nearest(small, c.factor, xv);
  const auto want_y = test::naive_conv(d, big_x, wv, bv);
  const auto want = test::naive_conv_backward(d, big_x, wv, dyv);
  const auto want_dx = test::sum_blocks(small, c.factor, want.dx);
  auto expect_near = [](const std::vector<float>& got, const std::vector<double>& ref, double tol, const char* what) {
    ASSERT_EQ(got.size(), ref.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], tol) << what << " at " << i;
  };
  const int f2 = c.factor * c.factor;
  expect_near(y.to_host(), want_y, 1e-6 * c.in_c * c.kh * c.kw + 1e-5, "y");
  expect_near(dx.to_host(), want_dx, 1e-6 * c.out_c * c.kh * c.kw * f2 + 1e-5, "dx");
  expect_near(dw.to_host(), want.dw, 1e-6 * os.n * os.h * os.w + 1e-5, "dw");
  expect_near(db.to_host(), want.db, 1e-6 * os.n * os.h * os.w + 1e-5, "db");
}

// The fused ops compute the same floats as the plain ones composed with the ReLU ops: the
// default runs exactly those; the CPU's ReLU post-op on the small convolution is oneDNN's own
// ReLU on the same values (max(v, 0)) and the shuffle only moves them; its backward masks while
// shuffling, the same values as masking first. So equality is exact (-0 == +0). dx null (the
// first layer) must leave dx alone.
TEST_P(ModelUpsampleConv2D, ReluFormsEqualTheComposition) {
  const auto [c, use_default] = GetParam();
  auto be = make_cpu_backend(2);
  Backend& be_ = *be;
  const Shape small{c.n, c.in_c, c.h, c.w};
  const ConvDesc d = upsampled_desc(c);
  const Shape os = d.out();
  Tensor x = test::random_tensor(be_, small, 31), w = test::random_tensor(be_, Shape{c.out_c, c.in_c, c.kh, c.kw}, 32);
  Tensor b = test::random_tensor(be_, Shape{1, c.out_c, 1, 1}, 33), dy = test::random_tensor(be_, os, 34);
  // use_default: Backend's fused forms around this backend's plain ops (the virtual calls they
  // make), which is how every backend without its own fused forms runs them.
  const int64_t n_fwd = be->upsample_conv2d_scratch(d, c.factor);
  const int64_t n_bwd = use_default ? be->Backend::upsample_conv2d_backward_scratch(d, c.factor, true)
                                    : be->upsample_conv2d_backward_scratch(d, c.factor, true);
  // The default keeps the masked gradient after the forward's scratch; the CPU's polyphase path
  // masks on its way to the small grid and needs none.
  EXPECT_EQ(n_bwd, use_default || !c.same ? n_fwd + os.size() : 0);
  Tensor s(be_, Shape{1, 1, 1, int(std::max<int64_t>(1, n_bwd))});

  // Plain: conv, ReLU, ReLU's gradient, the two backward ops.
  Tensor y_conv(be_, os), y_plain(be_, os), d_pre(be_, os), dx_plain(be_, small), dw_plain(be_, w.shape()),
      db_plain(be_, b.shape());
  be->upsample_conv2d_forward(d, c.factor, x.data(), w.data(), b.data(), y_conv.data(), s.data());
  be->relu_forward(os.size(), y_conv.data(), y_plain.data());
  be->relu_backward(os.size(), y_conv.data(), dy.data(), d_pre.data());
  be->upsample_conv2d_backward_weights(d, c.factor, x.data(), d_pre.data(), dw_plain.data(), db_plain.data(),
                                       s.data());
  be->upsample_conv2d_backward_data(d, c.factor, d_pre.data(), w.data(), dx_plain.data(), s.data());
  int cut = 0;
  for (float v : y_plain.to_host()) cut += v == 0.0f;
  EXPECT_GT(cut, 0);  // the ReLU did cut something
  EXPECT_LT(cut, os.size());

  // Fused, dx wanted; then without dx (left as it was), then without ReLU (the plain gradients).
  Tensor y(be_, os), dx(be_, small), dw(be_, w.shape()), db(be_, b.shape());
  const std::vector<float> sentinel(size_t(small.size()), 7.0f);
  if (use_default) {
    be->Backend::upsample_conv2d_relu_forward(d, c.factor, x.data(), w.data(), b.data(), y.data(), s.data());
    be->Backend::upsample_conv2d_backward(d, c.factor, x.data(), y.data(), dy.data(), w.data(), dx.data(), dw.data(),
                                          db.data(), s.data());
  } else {
    be->upsample_conv2d_relu_forward(d, c.factor, x.data(), w.data(), b.data(), y.data(), s.data());
    be->upsample_conv2d_backward(d, c.factor, x.data(), y.data(), dy.data(), w.data(), dx.data(), dw.data(),
                                 db.data(), s.data());
  }
  EXPECT_EQ(y.to_host(), y_plain.to_host());
  EXPECT_EQ(dx.to_host(), dx_plain.to_host());
  EXPECT_EQ(dw.to_host(), dw_plain.to_host());
  EXPECT_EQ(db.to_host(), db_plain.to_host());

  dx.upload(sentinel.data());
  be->upsample_conv2d_backward(d, c.factor, x.data(), y.data(), dy.data(), w.data(), nullptr, dw.data(), db.data(),
                               s.data());
  EXPECT_EQ(dx.to_host(), sentinel);
  EXPECT_EQ(dw.to_host(), dw_plain.to_host());

  Tensor dx_lin(be_, small), dw_lin(be_, w.shape()), db_lin(be_, b.shape());
  be->upsample_conv2d_backward_weights(d, c.factor, x.data(), dy.data(), dw_lin.data(), db_lin.data(), s.data());
  be->upsample_conv2d_backward_data(d, c.factor, dy.data(), w.data(), dx_lin.data(), s.data());
  be->upsample_conv2d_backward(d, c.factor, x.data(), nullptr, dy.data(), w.data(), dx.data(), dw.data(), db.data(),
                               s.data());
  EXPECT_EQ(dx.to_host(), dx_lin.to_host());
  EXPECT_EQ(dw.to_host(), dw_lin.to_host());
  EXPECT_EQ(db.to_host(), db_lin.to_host());
}

INSTANTIATE_TEST_SUITE_P(
    Model, ModelUpsampleConv2D,
    ::testing::Combine(::testing::Values(UpCase{2, 100, 4, 5, 132, 8, 8, 2, true},  // MNN's up2_conv1
                                         UpCase{2, 50, 4, 5, 50, 5, 5, 2, true},    // MNN's up1_conv1
                                         UpCase{2, 3, 3, 4, 5, 3, 3, 2, true},
                                         UpCase{2, 3, 3, 4, 5, 2, 2, 2, true},      // even: pads after only
                                         UpCase{1, 2, 3, 3, 3, 4, 4, 3, true},      // factor 3
                                         UpCase{1, 9, 3, 4, 3, 3, 2, 2, true},      // non-square kernel
                                         UpCase{1, 2, 2, 2, 2, 7, 7, 2, true},      // kernel wider than input
                                         UpCase{2, 3, 3, 4, 2, 4, 4, 2, false}),    // 'valid': plain path
                       ::testing::Bool()));

TEST(ModelUpsampleConv2DLayer, ShapeAndGradients) {
  auto be = make_cpu_backend(2);
  UpsampleConv2D layer("up", *be, 2, 3, 4, 4);
  EXPECT_EQ(layer.output_shape({Shape{2, 3, 3, 4}}), (Shape{2, 4, 6, 8}));
  EXPECT_EQ(layer.weights().shape(), (Shape{4, 3, 4, 4}));  // the Conv2D's OIHW: checkpoints unchanged
  std::mt19937_64 rng(5);
  layer.init(rng);
  auto bv = random_values(4, 6);
  layer.bias().upload(bv.data());
  Tensor x = test::random_tensor(*be, Shape{2, 3, 3, 4}, 7);
  test::check_layer_gradients(*be, layer, {&x});
}

// UpsampleConv2D with relu (MNN's up1_conv1/up2_conv1 unless DOWNSCALE_FUSE_LAYERS=0) computes
// exactly what UpsampleConv2D then ReLU did: output, input and parameter gradients (exact: see
// ReluFormsEqualTheComposition). Same parameter names: checkpoints load either way.
TEST(ModelUpsampleConv2DLayer, ReluEqualsUpsampleConvThenRelu) {
  auto be = make_cpu_backend(2);
  const Shape in{2, 5, 3, 4};
  UpsampleConv2D fused("up", *be, 2, 5, 6, 5, true), plain("up", *be, 2, 5, 6, 5);
  EXPECT_EQ(fused.type(), "UpSampling2D+Conv2D+ReLU");
  EXPECT_EQ(plain.type(), "UpSampling2D+Conv2D");
  ASSERT_EQ(fused.params().size(), 2u);
  EXPECT_EQ(fused.params()[0].name, "up/W");
  EXPECT_EQ(fused.params()[1].name, "up/b");
  test::expect_fused_relu_equals_layer_then_relu(*be, fused, plain, in);
}

// The fused layer against finite differences (check_layer_gradients' eps 1e-2, tolerance 1e-2).
// The ReLU's kink is at the pre-activation and finite differences across it are wrong, so the
// input is redrawn until every pre-activation is at least 0.01 from 0, as for Conv2D+ReLU
// (imagenet_layers_test.cpp): a step of 1e-2 in x moves one by at most 1e-2 * sum|w| over the
// taps it feeds, and in w by 1e-2 * |x| < 1e-2.
TEST(ModelUpsampleConv2DLayer, ReluGradients) {
  auto be = make_cpu_backend(2);
  const Shape in{1, 2, 2, 3};
  UpsampleConv2D layer("up", *be, 2, 2, 2, 3, true);
  std::mt19937_64 rng(5);
  layer.init(rng);
  const auto bv = random_values(2, 6, -0.3f, 0.3f);
  layer.bias().upload(bv.data());
  const ConvDesc d = layer.desc(layer.upsampled(in));
  uint64_t seed = 7;
  int cut = 0;
  for (;; ++seed) {
    ASSERT_LT(seed, 300u) << "no input without a pre-activation near 0";
    const auto pre = test::naive_conv(d, test::upsample_nearest(in, 2, random_values(size_t(in.size()), seed)),
                                      layer.weights().to_host(), bv);
    if (!std::all_of(pre.begin(), pre.end(), [](double v) { return std::abs(v) >= 0.01; })) continue;
    cut = int(std::count_if(pre.begin(), pre.end(), [](double v) { return v < 0; }));
    if (cut > 0 && cut < int(pre.size())) break;  // both sides of the kink present
  }
  Tensor x = test::random_tensor(*be, in, seed);
  test::check_layer_gradients(*be, layer, {&x});
}

}  // namespace
}  // namespace ds::model
