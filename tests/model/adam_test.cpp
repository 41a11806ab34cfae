// Adam against Keras' update written out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "io/error.h"
#include "model/adam.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

// Two steps on two weights with gradients of different scale, in double by hand. The backend
// updates in float: ~1e-7 relative per operation, so 1e-6 absolute on weights of order 1.
TEST(ModelAdam, MatchesKerasUpdate) {
  auto be = make_cpu_backend(1);
  Tensor w = test::make_tensor(*be, Shape{1, 1, 1, 2}, {1.0f, -0.5f});
  Tensor g(*be, Shape{1, 1, 1, 2});
  Adam adam({{"w", &w, &g}}, *be);
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-7;
  double wd[2] = {1.0, -0.5}, m[2] = {0, 0}, v[2] = {0, 0};
  const float grads[2][2] = {{0.5f, -1e-3f}, {-0.25f, 2e-3f}};
  for (int t = 1; t <= 2; ++t) {
    g.upload(grads[t - 1]);
    adam.step(lr);
    const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (int i = 0; i < 2; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * grads[t - 1][i];
      v[i] = b2 * v[i] + (1 - b2) * double(grads[t - 1][i]) * grads[t - 1][i];
      wd[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
    }
    const auto got = w.to_host();
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(got[size_t(i)], wd[i], 1e-6) << "step " << t << " weight " << i;
  }
  EXPECT_EQ(adam.steps(), 2);
}

// With Keras' bias correction the first step moves every weight by lr against its gradient's
// sign, whatever the gradient's scale, up to eps / (sqrt(1 - beta2) |g|): < 1e-5 relative here.
TEST(ModelAdam, FirstStepIsLearningRateTimesSign) {
  auto be = make_cpu_backend(1);
  Tensor w(*be, Shape{1, 1, 1, 3});
  Tensor g = test::make_tensor(*be, Shape{1, 1, 1, 3}, {100.0f, -0.5f, 2.0f});
  Adam adam({{"w", &w, &g}}, *be);
  adam.step(0.1);
  const auto got = w.to_host();
  EXPECT_NEAR(got[0], -0.1, 1e-5);
  EXPECT_NEAR(got[1], 0.1, 1e-5);
  EXPECT_NEAR(got[2], -0.1, 1e-5);
}

// The same tensor under two names would be updated twice a step (on a GPU by two blocks of one
// launch at once): refused, naming both.
TEST(ModelAdam, RefusesATensorListedTwice) {
  auto be = make_cpu_backend(1);
  Tensor w(*be, Shape{1, 1, 1, 3}), g(*be, Shape{1, 1, 1, 3}), w2(*be, Shape{1, 1, 1, 3}), g2(*be, Shape{1, 1, 1, 3});
  EXPECT_NO_THROW(Adam({{"a", &w, &g}, {"b", &w2, &g2}}, *be));
  try {
    Adam adam({{"a", &w, &g}, {"b", &w2, &g2}, {"tied", &w, &g2}}, *be);
    FAIL() << "a tensor listed twice was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("a and tied"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ds::model
