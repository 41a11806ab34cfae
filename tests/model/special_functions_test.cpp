#include <gtest/gtest.h>

#include <cmath>

#include "model/special_functions.h"

namespace ds::model {
namespace {

TEST(ModelDigamma, KnownValues) {
  const double gamma = 0.57721566490153286061;  // Euler-Mascheroni
  // The series is accurate to ~1e-13 (special_functions.h); 1e-12 allows a few ulps more.
  EXPECT_NEAR(digamma(1.0), -gamma, 1e-12);
  EXPECT_NEAR(digamma(2.0), 1.0 - gamma, 1e-12);
  EXPECT_NEAR(digamma(0.5), -gamma - 2.0 * std::log(2.0), 1e-12);
  EXPECT_NEAR(digamma(10.0), 2.251752589066721, 1e-12);
  EXPECT_NEAR(digamma(-0.5), 0.03648997397857652, 1e-12);  // reflection branch
  EXPECT_TRUE(std::isnan(digamma(0.0)));
  EXPECT_TRUE(std::isnan(digamma(-2.0)));
}

// digamma is the derivative of lgamma. The fourth-order central difference with a step
// proportional to x has truncation error ~ (h^4/30) |psi^(4)| ~ 1e-12 and rounding error
// ~ 1e-16 |lgamma| / h ~ 1e-12 over this range, so 1e-9 tests digamma, not the difference.
TEST(ModelDigamma, MatchesDerivativeOfLgamma) {
  for (double x : {1e-3, 0.01, 0.1, 0.37, 0.99, 1.0, 1.5, 2.7, 5.9, 6.0, 6.1, 12.5, 50.0, 300.0}) {
    const double h = 1e-3 * x;
    const double d1 = std::lgamma(x + h) - std::lgamma(x - h), d2 = std::lgamma(x + 2 * h) - std::lgamma(x - 2 * h);
    const double numeric = (8.0 * d1 - d2) / (12.0 * h);
    EXPECT_NEAR(digamma(x), numeric, 1e-9 * std::max(1.0, std::abs(numeric))) << "x = " << x;
  }
}

}  // namespace
}  // namespace ds::model
