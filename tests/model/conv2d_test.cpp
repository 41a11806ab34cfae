// Conv2D: the CPU backend against a naive loop (including Keras' asymmetric 'same' padding), and
// the layer's backward against finite differences.
#include <gtest/gtest.h>

#include "model/backend.h"
#include "model/layers/conv2d.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::random_tensor;
using test::random_values;

// y[n,o,i,j] = b[o] + sum_{c,a,b} x[n,c,i+a-top,j+b-left] w[o,c,a,b], zero outside x.
std::vector<double> naive_conv(const ConvDesc& d, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& b) {
  const Shape o = d.out();
  std::vector<double> y(size_t(o.size()));
  for (int n = 0; n < o.n; ++n)
    for (int oc = 0; oc < o.c; ++oc)
      for (int i = 0; i < o.h; ++i)
        for (int j = 0; j < o.w; ++j) {
          double s = b[size_t(oc)];
          for (int c = 0; c < d.in.c; ++c)
            for (int a = 0; a < d.kh; ++a)
              for (int e = 0; e < d.kw; ++e) {
                const int r = i + a - d.pad_top, q = j + e - d.pad_left;
                if (r < 0 || r >= d.in.h || q < 0 || q >= d.in.w) continue;
                s += double(x[size_t(((n * d.in.c + c) * d.in.h + r) * d.in.w + q)]) *
                     w[size_t(((oc * d.in.c + c) * d.kh + a) * d.kw + e)];
              }
          y[size_t(((n * o.c + oc) * o.h + i) * o.w + j)] = s;
        }
  return y;
}

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
                                           ConvCase{1, 3, 3, 2, 5, 5, true}));  // kernel wider than input

}  // namespace
}  // namespace ds::model
