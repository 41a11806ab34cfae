// Conv2D: the CPU backend against naive loops (including Keras' asymmetric 'same' padding), on
// the blocked layouts oneDNN chooses and on plain NCHW, and the layer's backward against finite
// differences.
#include <gtest/gtest.h>

#include <cstdlib>
#include <tuple>

#include "model/backend.h"
#include "model/layers/conv2d.h"
#include "conv_reference.h"
#include "model_test_util.h"
#include "support/scoped_env.h"

namespace ds::model {
namespace {

using test::naive_conv;
using test::random_tensor;
using test::random_values;

TEST(ModelConv2D, SamePaddingFollowsKeras) {
  int before = 0, after = 0;
  same_padding(3, before, after);
  EXPECT_EQ(before, 1);
  EXPECT_EQ(after, 1);
  same_padding(2, before, after);  // the extra row/column goes after (bottom/right)
  EXPECT_EQ(before, 0);
  EXPECT_EQ(after, 1);
  same_padding(8, before, after);
  EXPECT_EQ(before, 3);
  EXPECT_EQ(after, 4);
}

// A 2x2 all-ones kernel on a 3x3 input with 'same' padding: Keras pads only the bottom row and
// right column, so y[i][j] = x[i][j] + x[i][j+1] + x[i+1][j] + x[i+1][j+1] (zero past the end).
TEST(ModelConv2D, EvenKernelPadsBottomRight) {
  auto be = make_cpu_backend(1);
  Conv2D conv("c", *be, 1, 1, 2, 2, Padding::kSame);
  const std::vector<float> ones(4, 1.0f), x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  conv.weights().upload(ones.data());
  Tensor in = test::make_tensor(*be, Shape{1, 1, 3, 3}, x);
  ASSERT_EQ(conv.output_shape({in.shape()}), (Shape{1, 1, 3, 3}));
  Tensor out(*be, Shape{1, 1, 3, 3});
  conv.forward(*be, {&in}, out);
  const std::vector<float> y = out.to_host();
  const std::vector<float> want = {1 + 2 + 4 + 5, 2 + 3 + 5 + 6, 3 + 6, 4 + 5 + 7 + 8, 5 + 6 + 8 + 9, 6 + 9,
                                   7 + 8, 8 + 9, 9};
  for (size_t i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(y[i], want[i]) << "at " << i;
}

struct ConvCase {
  int in_c, h, w, out_c, kh, kw;
  bool same;
};
// Readable test names in ctest ("c2x5x6_o3_k3x3_same") instead of the struct's bytes.
void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << "c" << c.in_c << "x" << c.h << "x" << c.w << "_o" << c.out_c << "_k" << c.kh << "x" << c.kw
      << (c.same ? "_same" : "_valid");
}

class ModelConv2DCases : public ::testing::TestWithParam<ConvCase> {};

// Tolerance: float sums of at most ~100 products of values in [-1, 1] against a double
// reference: rounding stays below 1e-5; 1e-4 absolute leaves room and still catches any
// misplaced tap (an O(0.1) error).
TEST_P(ModelConv2DCases, ForwardMatchesNaiveLoop) {
  const ConvCase c = GetParam();
  auto be = make_cpu_backend(2);
  Conv2D conv("c", *be, c.in_c, c.out_c, c.kh, c.kw, c.same ? Padding::kSame : Padding::kValid);
  const Shape in_shape{2, c.in_c, c.h, c.w};
  const auto xv = random_values(size_t(in_shape.size()), 1);
  const auto wv = random_values(size_t(conv.weights().size()), 2);
  const auto bv = random_values(size_t(c.out_c), 3);
  Tensor x = test::make_tensor(*be, in_shape, xv);
  conv.weights().upload(wv.data());
  conv.bias().upload(bv.data());
  const Shape os = conv.output_shape({in_shape});
  Tensor y(*be, os);
  conv.forward(*be, {&x}, y);
  const auto got = y.to_host();
  const auto want = naive_conv(conv.desc(in_shape), xv, wv, bv);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "at " << i;
}

TEST_P(ModelConv2DCases, BackwardMatchesFiniteDifferences) {
  const ConvCase c = GetParam();
  auto be = make_cpu_backend(2);
  Conv2D conv("c", *be, c.in_c, c.out_c, c.kh, c.kw, c.same ? Padding::kSame : Padding::kValid);
  std::mt19937_64 rng(5);
  conv.init(rng);
  auto bv = random_values(size_t(c.out_c), 6);
  conv.bias().upload(bv.data());  // non-zero bias so db is not trivially checked at 0
  Tensor x = random_tensor(*be, Shape{2, c.in_c, c.h, c.w}, 7);
  test::check_layer_gradients(*be, conv, {&x});
}

INSTANTIATE_TEST_SUITE_P(Model, ModelConv2DCases,
                         ::testing::Values(ConvCase{2, 5, 6, 3, 3, 3, true},    // odd, same
                                           ConvCase{2, 5, 6, 3, 2, 2, true},    // even, same: asymmetric
                                           ConvCase{3, 6, 5, 2, 4, 4, true},    // even, same: 1 before, 2 after
                                           ConvCase{2, 6, 7, 3, 4, 4, false},   // the head's 'valid' 4x4
                                           ConvCase{2, 5, 5, 2, 3, 2, true},    // non-square kernel
                                           ConvCase{1, 3, 3, 2, 5, 5, true},    // kernel wider than input
                                           // Channels past one 8-channel block (AVX2's nChw8c) and
                                           // two full ones (and AVX-512's 16c): the blocked paths.
                                           ConvCase{9, 4, 5, 17, 3, 3, true},
                                           ConvCase{16, 4, 3, 16, 2, 2, true}));

// Every convolution of MNN's geometry families (branch kernels 2..9 on 20 input channels, the wide
// 8x8 and the 'valid' head) on a small grid, forward, backward-data and backward-weights against
// the naive loops, once on the layouts oneDNN chooses and once forced plain
// (DS_CONV_PLAIN_LAYOUTS=1), so both code paths stay right.
//
// Tolerance: each result is a float sum of n products of values in [-1, 1] (n = taps per output,
// or batch * pixels per weight); its rounding error grows at most ~n * 6e-8 * sqrt(n) for random
// signs, so 1e-6 * n absolute (1e-4 for the 100-product sums above, 8e-3 for 8448) is safe, while
// a wrong tap or padding side makes errors of the order of one product (~0.1 to 1).
struct LayoutCase {
  int n, in_c, h, w, out_c, k;
  bool same;
};
void PrintTo(const LayoutCase& c, std::ostream* os) {
  *os << "n" << c.n << "_c" << c.in_c << "x" << c.h << "x" << c.w << "_o" << c.out_c << "_k" << c.k
      << (c.same ? "_same" : "_valid");
}

class ModelConv2DLayouts : public ::testing::TestWithParam<std::tuple<LayoutCase, bool>> {};

TEST_P(ModelConv2DLayouts, AllPassesMatchNaiveLoops) {
  const auto [c, plain] = GetParam();
  auto be = [&] {  // a fresh backend: it takes the setting when it is made
    const ds::test::ScopedEnv layouts("DS_CONV_PLAIN_LAYOUTS", plain ? "1" : "0");
    return make_cpu_backend(2);
  }();
  ConvDesc d;
  d.in = Shape{c.n, c.in_c, c.h, c.w};
  d.out_c = c.out_c;
  d.kh = d.kw = c.k;
  if (c.same) {
    same_padding(c.k, d.pad_top, d.pad_bottom);
    same_padding(c.k, d.pad_left, d.pad_right);
  }
  const Shape os = d.out();
  const auto xv = random_values(size_t(d.in.size()), 11), wv = random_values(size_t(c.out_c) * c.in_c * c.k * c.k, 12);
  const auto bv = random_values(size_t(c.out_c), 13), dyv = random_values(size_t(os.size()), 14);
  Tensor x = test::make_tensor(*be, d.in, xv), w = test::make_tensor(*be, Shape{c.out_c, c.in_c, c.k, c.k}, wv);
  Tensor b = test::make_tensor(*be, Shape{1, c.out_c, 1, 1}, bv), dy = test::make_tensor(*be, os, dyv);
  Tensor y(*be, os), dx(*be, d.in), dw(*be, w.shape()), db(*be, b.shape());
  be->conv2d_forward(d, x.data(), w.data(), b.data(), y.data());
  be->conv2d_backward_data(d, dy.data(), w.data(), dx.data());
  be->conv2d_backward_weights(d, x.data(), dy.data(), dw.data(), db.data());

  const auto want_y = naive_conv(d, xv, wv, bv);
  const auto want = test::naive_conv_backward(d, xv, wv, dyv);
  auto expect_near = [](const std::vector<float>& got, const std::vector<double>& ref, double tol, const char* what) {
    ASSERT_EQ(got.size(), ref.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], tol) << what << " at " << i;
  };
  expect_near(y.to_host(), want_y, 1e-6 * c.in_c * c.k * c.k + 1e-5, "y");
  expect_near(dx.to_host(), want.dx, 1e-6 * c.out_c * c.k * c.k + 1e-5, "dx");
  expect_near(dw.to_host(), want.dw, 1e-6 * os.n * os.h * os.w + 1e-5, "dw");
  expect_near(db.to_host(), want.db, 1e-6 * os.n * os.h * os.w + 1e-5, "db");
}

INSTANTIATE_TEST_SUITE_P(Model, ModelConv2DLayouts,
                         ::testing::Combine(::testing::Values(LayoutCase{2, 20, 7, 9, 50, 2, true},
                                                              LayoutCase{2, 50, 7, 9, 25, 9, true},
                                                              LayoutCase{2, 25, 7, 9, 10, 7, true},
                                                              LayoutCase{2, 50, 8, 9, 75, 5, true},
                                                              LayoutCase{2, 100, 10, 9, 132, 8, true},
                                                              LayoutCase{2, 132, 9, 10, 3, 4, false}),
                                            ::testing::Bool()));

}  // namespace
}  // namespace ds::model
