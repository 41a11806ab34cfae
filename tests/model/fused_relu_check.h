// A layer with its ReLU inside (Conv2D+ReLU, UpsampleConv2D with relu) against the same layer
// without it followed by a ReLU layer: shared by layers_test.cpp and upsample_conv2d_test.cpp.
#pragma once
#include <gtest/gtest.h>

#include <random>

#include "model/layers/conv2d.h"
#include "model/layers/relu.h"
#include "model_test_util.h"

namespace ds::model::test {

// Both layers from the same seed and the same random bias (init zeroes it: some outputs then
// flip sign), on a random input of `in`: the output, the input gradient and both parameter
// gradients must be equal bit for bit (the fused forms compute the same floats), and the ReLU
// must cut something, or the check would not see the mask.
inline void expect_fused_relu_equals_layer_then_relu(Backend& be, Conv2D& fused, Conv2D& plain, const Shape& in) {
  std::mt19937_64 r1(5), r2(5);
  fused.init(r1);
  plain.init(r2);
  const auto bv = random_values(size_t(fused.bias().size()), 9);
  fused.bias().upload(bv.data());
  plain.bias().upload(bv.data());
  Tensor x = random_tensor(be, in, 1);
  const Shape os = plain.output_shape({in});
  Tensor y_fused(be, os), y_conv(be, os), y_plain(be, os);
  fused.forward(be, {&x}, y_fused);
  plain.forward(be, {&x}, y_conv);
  ReLU relu("r");
  relu.forward(be, {&y_conv}, y_plain);
  EXPECT_EQ(y_fused.to_host(), y_plain.to_host());
  int zeros = 0;
  for (float v : y_plain.to_host()) zeros += v == 0.0f;
  EXPECT_GT(zeros, 0);  // the ReLU did cut something

  Tensor dout = random_tensor(be, os, 2), d_conv(be, os), dx_fused(be, in), dx_plain(be, in);
  fused.backward(be, {&x}, y_fused, dout, {&dx_fused});
  relu.backward(be, {&y_conv}, y_plain, dout, {&d_conv});
  plain.backward(be, {&x}, y_conv, d_conv, {&dx_plain});
  EXPECT_EQ(dx_fused.to_host(), dx_plain.to_host());
  EXPECT_EQ(fused.weights_grad().to_host(), plain.weights_grad().to_host());
  EXPECT_EQ(fused.bias_grad().to_host(), plain.bias_grad().to_host());
}

}  // namespace ds::model::test
