// UpsampleConv2D and Backend::upsample_conv2d_*: nearest upsampling then a 'same' conv, which the
// CPU backend runs as one polyphase convolution on the small input. Checked against the naive
// loops on the upsampled input (forward, and backward through the upsampling's adjoint), for the
// CPU override and Backend's plain default, and the layer against finite differences.
#include <gtest/gtest.h>

#include "conv_reference.h"
#include "model/backend.h"
#include "model/layers/upsample_conv2d.h"
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

// Tolerance: as conv2d_test.cpp's layout test, 1e-6 per summed product; the folded kernel adds
// up to f*f taps before multiplying, which changes only the rounding, not the count's order.
TEST_P(ModelUpsampleConv2D, MatchesUpsampleThenNaiveConv) {
  const auto [c, use_default] = GetParam();
  auto be = make_cpu_backend(2);
  const Shape small{c.n, c.in_c, c.h, c.w};
  ConvDesc d;
  d.in = Shape{c.n, c.in_c, c.h * c.factor, c.w * c.factor};
  d.out_c = c.out_c;
  d.kh = c.kh;
  d.kw = c.kw;
  if (c.same) {
    same_padding(c.kh, d.pad_top, d.pad_bottom);
    same_padding(c.kw, d.pad_left, d.pad_right);
  }
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

}  // namespace
}  // namespace ds::model
