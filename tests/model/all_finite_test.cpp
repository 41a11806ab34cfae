// Backend::all_finite on the CPU backend (loss scaling's overflow check); the GPU's is checked
// against it in ModelCuda.AllFiniteFindsInfAndNan.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/backend.h"
#include "model/tensor.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

TEST(ModelCpuAllFinite, FindsInfAndNanAnywhere) {
  auto be = make_cpu_backend(2);
  Tensor t(*be, {3, 5, 7, 9});
  const auto v = test::random_values(size_t(t.size()), 1, -1e38f, 1e38f);
  t.upload(v.data());
  EXPECT_TRUE(be->all_finite(t.size(), t.data()));
  for (int64_t at : {int64_t(0), int64_t(500), t.size() - 1})
    for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), std::nanf("")}) {
      t.upload(v.data());
      t.data()[at] = bad;
      EXPECT_FALSE(be->all_finite(t.size(), t.data())) << at << " " << bad;
    }
  EXPECT_TRUE(be->all_finite(0, t.data()));
}

// Several buffers at once (loss scaling's form): false as soon as any one holds an Inf or NaN,
// true for none or only empty ones.
TEST(ModelCpuAllFinite, SeveralBuffersAtOnce) {
  auto be = make_cpu_backend(2);
  Tensor a(*be, {2, 3, 4, 5}), b(*be, {1, 7, 1, 1});
  a.upload(test::random_values(size_t(a.size()), 1).data());
  b.upload(test::random_values(size_t(b.size()), 2).data());
  EXPECT_TRUE(be->all_finite(std::vector<Backend::FloatSpan>{}));
  EXPECT_TRUE(be->all_finite({{a.data(), a.size()}, {b.data(), 0}, {b.data(), b.size()}}));
  b.data()[6] = std::nanf("");
  EXPECT_FALSE(be->all_finite({{a.data(), a.size()}, {b.data(), b.size()}}));
  EXPECT_TRUE(be->all_finite({{a.data(), a.size()}, {b.data(), 6}}));
}

}  // namespace
}  // namespace ds::model
