// ReLU, nearest upsampling, channel concat and the sigmoid head: forward values by hand, backward
// against finite differences (tolerances explained in model_test_util.h).
#include <gtest/gtest.h>

#include <cmath>

#include "model/layers/concat.h"
#include "model/layers/conv2d.h"
#include "model/layers/relu.h"
#include "model/layers/sigmoid_channel.h"
#include "model/layers/upsample_nearest.h"
#include "fused_relu_check.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::make_tensor;
using test::random_tensor;

TEST(ModelLayers, ReluForward) {
  auto be = make_cpu_backend(1);
  ReLU relu("r");
  Tensor x = make_tensor(*be, Shape{1, 1, 1, 4}, {-2.0f, -0.0f, 0.5f, 3.0f});
  Tensor y(*be, x.shape());
  relu.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{0.0f, 0.0f, 0.5f, 3.0f}));
}

TEST(ModelLayers, ReluBackward) {
  auto be = make_cpu_backend(2);
  ReLU relu("r");
  // Values at least 0.1 away from the kink, ten times the finite-difference step.
  Tensor x = random_tensor(*be, Shape{2, 3, 4, 5}, 11, 0.1f, 1.0f, true);
  test::check_layer_gradients(*be, relu, {&x});
}

TEST(ModelLayers, UpsampleForwardRepeatsPixels) {
  auto be = make_cpu_backend(1);
  UpsampleNearest up("u", 2);
  Tensor x = make_tensor(*be, Shape{1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_EQ(up.output_shape({x.shape()}), (Shape{1, 1, 4, 6}));
  Tensor y(*be, Shape{1, 1, 4, 6});
  up.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{1, 1, 2, 2, 3, 3,  //
                                             1, 1, 2, 2, 3, 3,  //
                                             4, 4, 5, 5, 6, 6,  //
                                             4, 4, 5, 5, 6, 6}));
}

TEST(ModelLayers, UpsampleBackward) {
  auto be = make_cpu_backend(2);
  UpsampleNearest up2("u", 2), up3("u3", 3);
  Tensor x = random_tensor(*be, Shape{2, 3, 3, 4}, 12);
  test::check_layer_gradients(*be, up2, {&x});
  test::check_layer_gradients(*be, up3, {&x});
}

TEST(ModelLayers, ConcatForwardStacksChannels) {
  auto be = make_cpu_backend(1);
  Concat cat("cat");
  Tensor a = make_tensor(*be, Shape{2, 1, 1, 2}, {1, 2, 3, 4});        // samples: [1 2], [3 4]
  Tensor b = make_tensor(*be, Shape{2, 2, 1, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  ASSERT_EQ(cat.output_shape({a.shape(), b.shape()}), (Shape{2, 3, 1, 2}));
  Tensor y(*be, Shape{2, 3, 1, 2});
  cat.forward(*be, {&a, &b}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12}));
  EXPECT_THROW(cat.output_shape({a.shape(), Shape{2, 1, 2, 2}}), Error);
}

TEST(ModelLayers, ConcatBackward) {
  auto be = make_cpu_backend(2);
  Concat cat("cat");
  Tensor a = random_tensor(*be, Shape{2, 2, 3, 3}, 13);
  Tensor b = random_tensor(*be, Shape{2, 1, 3, 3}, 14);
  Tensor c = random_tensor(*be, Shape{2, 3, 3, 3}, 15);
  test::check_layer_gradients(*be, cat, {&a, &b, &c});
}

TEST(ModelLayers, SigmoidChannelForward) {
  auto be = make_cpu_backend(1);
  SigmoidChannel sig("s", 0);
  Tensor x = make_tensor(*be, Shape{2, 3, 1, 1}, {0.0f, -1.0f, 2.0f, 3.0f, 4.0f, -5.0f});
  Tensor y(*be, x.shape());
  sig.forward(*be, {&x}, y);
  const auto v = y.to_host();
  EXPECT_FLOAT_EQ(v[0], 0.5f);
  EXPECT_FLOAT_EQ(v[1], -1.0f);  // channels 1 and 2 pass through
  EXPECT_FLOAT_EQ(v[2], 2.0f);
  EXPECT_FLOAT_EQ(v[3], float(1.0 / (1.0 + std::exp(-3.0))));
  EXPECT_FLOAT_EQ(v[4], 4.0f);
  EXPECT_FLOAT_EQ(v[5], -5.0f);
}

TEST(ModelLayers, SigmoidChannelBackward) {
  auto be = make_cpu_backend(2);
  SigmoidChannel sig("s", 0);
  Tensor x = random_tensor(*be, Shape{2, 3, 3, 4}, 16, -3.0f, 3.0f);
  test::check_layer_gradients(*be, sig, {&x});
}

// A Conv2D with its ReLU in the layer (conv2d_relu_forward; backward masks with the output)
// computes exactly what Conv2D then ReLU did: output, input gradient and parameter gradients.
TEST(ModelLayers, ConvWithReluEqualsConvThenRelu) {
  auto be = make_cpu_backend(1);
  const Shape in{2, 3, 6, 7};
  Conv2D fused("c", *be, 3, 4, 3, 3, Padding::kSame, 0, true), plain("c", *be, 3, 4, 3, 3, Padding::kSame);
  EXPECT_EQ(fused.type(), "Conv2D+ReLU");
  test::expect_fused_relu_equals_layer_then_relu(*be, fused, plain, in);
}

}  // namespace
}  // namespace ds::model
