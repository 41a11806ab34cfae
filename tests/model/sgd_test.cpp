// SGD with momentum against the Keras update written out by hand, and the optimizer factory.
#include <gtest/gtest.h>

#include "model/adam.h"
#include "model/sgd.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

// Three steps with a changing learning rate (where Keras' and PyTorch's forms differ), in double
// by hand: v = mu v - lr g; w += v. Float arithmetic: ~1e-7 relative per op; 1e-6 absolute.
TEST(ModelSgd, MatchesHandComputedMomentumUpdates) {
  auto be = make_cpu_backend(1);
  Tensor w = test::make_tensor(*be, Shape{1, 1, 1, 2}, {1.0f, -0.5f});
  Tensor g(*be, Shape{1, 1, 1, 2});
  Sgd sgd({{"w", &w, &g}}, *be, 0.9);
  double wd[2] = {1.0, -0.5}, v[2] = {0, 0};
  const float grads[3][2] = {{0.5f, -1.0f}, {-0.25f, 2.0f}, {1.0f, 0.0f}};
  const double lrs[3] = {0.1, 0.05, 0.2};
  for (int t = 0; t < 3; ++t) {
    g.upload(grads[t]);
    sgd.step(lrs[t]);
    for (int i = 0; i < 2; ++i) {
      v[i] = 0.9 * v[i] - lrs[t] * grads[t][i];
      wd[i] += v[i];
    }
    const auto got = w.to_host();
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(got[size_t(i)], wd[i], 1e-6) << "step " << t << " weight " << i;
  }
  // Weight 1's velocity: 0.1, then 0.9 * 0.1 - 0.05 * 2 = -0.01, then 0.9 * -0.01 - 0 = -0.009.
  EXPECT_NEAR(sgd.velocity()[0].to_host()[1], -0.009, 1e-7);
  EXPECT_EQ(sgd.steps(), 3);
}

TEST(ModelSgd, ZeroMomentumIsPlainGradientDescent) {
  auto be = make_cpu_backend(1);
  Tensor w = test::make_tensor(*be, Shape{1, 1, 1, 1}, {2.0f});
  Tensor g = test::make_tensor(*be, Shape{1, 1, 1, 1}, {4.0f});
  Sgd sgd({{"w", &w, &g}}, *be, 0.0);
  sgd.step(0.25);
  sgd.step(0.25);
  EXPECT_FLOAT_EQ(w.to_host()[0], 0.0f);  // 2 - 0.25*4 - 0.25*4
}

TEST(ModelSgd, FactoryMakesEitherAndRejectsNonsense) {
  auto be = make_cpu_backend(1);
  Tensor w(*be, Shape{1, 1, 1, 1}), g(*be, Shape{1, 1, 1, 1});
  EXPECT_EQ(make_optimizer({"adam", 0.9}, {{"w", &w, &g}}, *be)->name(), "adam");
  auto sgd = make_optimizer({"sgd", 0.5}, {{"w", &w, &g}}, *be);
  EXPECT_EQ(sgd->name(), "sgd");
  ASSERT_EQ(sgd->slots().size(), 1u);
  EXPECT_EQ(sgd->slots()[0].name, "sgd/velocity");
  EXPECT_THROW(make_optimizer({"rmsprop", 0.9}, {{"w", &w, &g}}, *be), UsageError);
  EXPECT_THROW(make_optimizer({"sgd", 1.0}, {{"w", &w, &g}}, *be), UsageError);
}

}  // namespace
}  // namespace ds::model
