// The layers added for DeepESD and regularisation: Dense, Flatten, max/average pooling, batch
// norm, dropout and the land-point scatter. Forward values by hand; every backward against
// central finite differences (check_layer_gradients; tolerances explained in model_test_util.h).
#include <gtest/gtest.h>

#include <cmath>

#include "model/layers/batch_norm.h"
#include "model/layers/dense.h"
#include "model/layers/dropout.h"
#include "model/layers/flatten.h"
#include "model/layers/pool2d.h"
#include "model/layers/scatter_to_grid.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::make_tensor;
using test::random_tensor;

TEST(ModelNewLayers, DenseForwardByHand) {
  auto be = make_cpu_backend(1);
  Dense d("d", *be, 3, 2);
  d.weights().upload(std::vector<float>{1, 2, 3, -1, 0, 1}.data());  // rows: outputs
  d.bias().upload(std::vector<float>{0.5f, -0.5f}.data());
  Tensor x = make_tensor(*be, Shape{2, 3, 1, 1}, {1, 1, 1, 2, 0, -1});
  ASSERT_EQ(d.output_shape({x.shape()}), (Shape{2, 2, 1, 1}));
  Tensor y(*be, Shape{2, 2, 1, 1});
  d.forward(*be, {&x}, y);
  // sample 0: [1+2+3+0.5, -1+0+1-0.5]; sample 1: [2+0-3+0.5, -2+0-1-0.5]
  EXPECT_EQ(y.to_host(), (std::vector<float>{6.5f, -0.5f, -0.5f, -3.5f}));
  EXPECT_THROW(d.output_shape({Shape{2, 3, 2, 1}}), Error);  // not flattened: names the layer
  EXPECT_EQ(d.parameter_count(), 8);
}

TEST(ModelNewLayers, DenseBackward) {
  auto be = make_cpu_backend(2);
  Dense d("d", *be, 7, 5);
  std::mt19937_64 rng(3);
  d.init(rng);
  d.bias().upload(test::random_values(5, 4).data());
  Tensor x = random_tensor(*be, Shape{3, 7, 1, 1}, 5);
  test::check_layer_gradients(*be, d, {&x});
}

// Glorot with a fan_out override: the fused heads' limit is sqrt(6 / (in + L)).
TEST(ModelNewLayers, DenseGlorotFanOut) {
  auto be = make_cpu_backend(1);
  Dense d("d", *be, 40, 3 * 50, 50);
  std::mt19937_64 rng(1);
  d.init(rng);
  const double limit = std::sqrt(6.0 / (40 + 50));
  double max_abs = 0;
  for (float v : d.weights().to_host()) max_abs = std::max(max_abs, double(std::abs(v)));
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.95 * limit);  // 6000 draws: the largest is within 0.1% of the limit
}

TEST(ModelNewLayers, FlattenKeepsNchwOrder) {
  auto be = make_cpu_backend(1);
  Flatten f("f");
  Tensor x = random_tensor(*be, Shape{2, 3, 2, 2}, 1);
  ASSERT_EQ(f.output_shape({x.shape()}), (Shape{2, 12, 1, 1}));
  Tensor y(*be, Shape{2, 12, 1, 1});
  f.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), x.to_host());
  test::check_layer_gradients(*be, f, {&x});
}

TEST(ModelNewLayers, MaxAndAveragePoolForwardByHand) {
  auto be = make_cpu_backend(1);
  // 4 x 5 input, 2x2 windows, stride 2: 'valid' drops the last column.
  Tensor x = make_tensor(*be, Shape{1, 1, 4, 5}, {1, 2, 3, 4, 99,  //
                                                  5, 6, 7, 8, 99,  //
                                                  -1, -2, 0, 0, 99,  //
                                                  -3, -4, 0, 1, 99});
  Pool2D mx("mx", PoolKind::kMax, 2, 2), av("av", PoolKind::kAverage, 2, 2);
  ASSERT_EQ(mx.output_shape({x.shape()}), (Shape{1, 1, 2, 2}));
  Tensor y(*be, Shape{1, 1, 2, 2});
  mx.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{6, 8, -1, 1}));
  av.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{3.5f, 5.5f, -2.5f, 0.25f}));
  Pool2D big("big", PoolKind::kMax, 5, 1);
  EXPECT_THROW(big.output_shape({x.shape()}), Error);
}

// Max pooling's finite differences are exact away from ties: values spread over [-1, 1] with a
// minimum gap far above the step (random floats tie with probability ~0), overlapping windows
// (stride 1) included so one input can receive gradient from several outputs.
TEST(ModelNewLayers, PoolBackward) {
  auto be = make_cpu_backend(2);
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAverage})
    for (auto [k, stride] : {std::pair{2, 2}, std::pair{3, 1}, std::pair{2, 3}}) {
      Pool2D pool("p", kind, k, stride);
      // Distinct values on a lattice 0.05 apart, shuffled: no two within 2 * eps (0.02).
      const Shape s{2, 2, 6, 7};
      std::vector<float> v(size_t(s.size()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = -4.0f + 0.05f * float(i);
      std::shuffle(v.begin(), v.end(), std::mt19937_64(k * 10 + stride));
      Tensor x = make_tensor(*be, s, v);
      SCOPED_TRACE("k " + std::to_string(k) + " stride " + std::to_string(stride));
      test::check_layer_gradients(*be, pool, {&x});
    }
}

TEST(ModelNewLayers, BatchNormTrainingNormalizesAndTracksRunningStats) {
  auto be = make_cpu_backend(1);
  BatchNorm bn("bn", *be, 2, 0.5f, 1e-3f);
  // Channel 0: 1, 3 (sample 0) and 5, 7 (sample 1): mean 4, biased var 5. Channel 1 constant 2.
  Tensor x = make_tensor(*be, Shape{2, 2, 1, 2}, {1, 3, 2, 2, 5, 7, 2, 2});
  Tensor y(*be, x.shape());
  bn.forward(*be, {&x}, y);
  const auto v = y.to_host();
  const double sd = std::sqrt(5.0 + 1e-3);
  // Float arithmetic on values of order 1: a few ulps (~1e-7); the variance (order 5) 1e-5.
  EXPECT_NEAR(v[0], (1 - 4) / sd, 1e-6);
  EXPECT_NEAR(v[5], (7 - 4) / sd, 1e-6);
  EXPECT_NEAR(v[2], 0.0, 1e-6);  // a constant channel normalizes to beta = 0
  // running = 0.5 * initial + 0.5 * batch, variance with Bessel's m/(m-1) = 4/3.
  const auto rm = bn.running_mean().to_host(), rv = bn.running_var().to_host();
  EXPECT_NEAR(rm[0], 2.0, 1e-6);
  EXPECT_NEAR(rm[1], 1.0, 1e-6);
  EXPECT_NEAR(rv[0], 0.5 + 0.5 * 5.0 * 4.0 / 3.0, 1e-5);
  EXPECT_NEAR(rv[1], 0.5, 1e-6);
  // Inference uses the running statistics.
  bn.set_mode(ForwardMode{false, 0});
  bn.forward(*be, {&x}, y);
  EXPECT_NEAR(y.to_host()[0], (1 - 2.0) / std::sqrt(rv[0] + 1e-3), 1e-5);
  EXPECT_EQ(bn.buffers().size(), 2u);
}

// Batch norm couples every element of a channel through the mean and variance; the finite
// differences see that coupling, so this checks the full backward, not only the diagonal.
// Non-trivial gamma and beta so their gradients are not checked at special values.
TEST(ModelNewLayers, BatchNormBackward) {
  auto be = make_cpu_backend(2);
  BatchNorm bn("bn", *be, 3);
  auto params = bn.params();
  params[0].value->upload(test::random_values(3, 1, 0.5f, 1.5f).data());
  params[1].value->upload(test::random_values(3, 2).data());
  Tensor x = random_tensor(*be, Shape{4, 3, 2, 3}, 3, -2.0f, 2.0f);
  test::check_layer_gradients(*be, bn, {&x});
}

TEST(ModelNewLayers, DropoutMaskIsSeededAndScaled) {
  auto be = make_cpu_backend(2);
  Dropout drop("drop", *be, 0.25f);
  const Shape s{4, 8, 16, 16};
  Tensor x(*be, s), y(*be, s), y2(*be, s);
  be->fill(x.data(), x.size(), 1.0f);
  drop.set_mode(ForwardMode{true, 7});
  drop.forward(*be, {&x}, y);
  drop.forward(*be, {&x}, y2);
  EXPECT_EQ(y.to_host(), y2.to_host()) << "same seed, same mask";
  int64_t zeros = 0;
  for (float v : y.to_host()) {
    if (v == 0.0f) ++zeros;
    else EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
  }
  // 8192 Bernoulli(0.25) draws: mean 2048, sd ~39; 5 sd either side cannot fail by chance.
  EXPECT_NEAR(double(zeros), 2048.0, 200.0);
  drop.set_mode(ForwardMode{true, 8});
  drop.forward(*be, {&x}, y2);
  EXPECT_NE(y.to_host(), y2.to_host()) << "another step, another mask";
  drop.set_mode(ForwardMode{false, 0});
  drop.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), x.to_host()) << "inference is the identity";
}

TEST(ModelNewLayers, DropoutBackward) {
  auto be = make_cpu_backend(2);
  Dropout drop("drop", *be, 0.5f);
  drop.set_mode(ForwardMode{true, 3});
  Tensor x = random_tensor(*be, Shape{2, 3, 4, 5}, 4);
  test::check_layer_gradients(*be, drop, {&x});
}

TEST(ModelNewLayers, ScatterToGridPlacesLandPoints) {
  auto be = make_cpu_backend(1);
  const std::vector<uint8_t> land = {0, 1, 1, 0, 1, 0};  // 2 x 3 grid, land at 1, 2, 4
  ScatterToGrid sc("g", *be, 2, 2, 3, land, -7.0f);
  EXPECT_EQ(sc.points(), 3);
  // One sample: channel 0 points [1, 2, 3], channel 1 points [4, 5, 6].
  Tensor x = make_tensor(*be, Shape{1, 6, 1, 1}, {1, 2, 3, 4, 5, 6});
  ASSERT_EQ(sc.output_shape({x.shape()}), (Shape{1, 2, 2, 3}));
  Tensor y(*be, Shape{1, 2, 2, 3});
  sc.forward(*be, {&x}, y);
  EXPECT_EQ(y.to_host(), (std::vector<float>{-7, 1, 2, -7, 3, -7, -7, 4, 5, -7, 6, -7}));
  EXPECT_THROW(sc.output_shape({Shape{1, 5, 1, 1}}), Error);
  EXPECT_THROW(ScatterToGrid("bad", *be, 1, 2, 2, land), Error);  // mask size != grid
  Tensor xb = random_tensor(*be, Shape{3, 6, 1, 1}, 2);
  test::check_layer_gradients(*be, sc, {&xb});
}

}  // namespace
}  // namespace ds::model
