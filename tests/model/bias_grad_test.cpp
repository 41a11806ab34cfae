// The convolution bias gradient's bodies (model/kernels/bias_grad.h, the CUDA backend's
// replacement for cudnnConvolutionBackwardBias) run on the CPU as cuda_bias_grad.cu launches them:
// every lane of every partial, the warp's shuffle tree, then each channel's partials in order.
//
// Against a double-precision sum per channel: the body's float lane sums add at most
// kBiasChunk / 32 = 128 values in [-1, 1] and the tree 5 more levels, so each partial is within
// ~130 * 6e-8 * 128 ~ 1e-3 absolute of exact and the channel (up to 7 * 4 partials here) within
// ~3e-3; the tolerance is 1e-4 of the channel's sum of |dy| (at least 1,000 here), about 30x
// looser than that bound, while one skipped or doubled chunk moves the sum by O(100) (the
// mutation checks below). Against the CPU backend's conv2d_backward_weights db: the same 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/backend.h"
#include "model/kernels/bias_grad.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

namespace k = kernels;

// db as the two CUDA kernels compute it, one lane at a time.
std::vector<float> bias_grad_on_host(const Shape& s, const std::vector<float>& dy) {
  const k::BiasGrad g = k::make_bias_grad(s.n, s.c, int64_t(s.h) * s.w);
  std::vector<float> partial(size_t(k::bias_grad_partials(g)), std::nanf(""));
  std::vector<float> lanes(k::kLanes);
  for (int64_t u = 0; u < k::bias_grad_partials(g); ++u) {
    for (int l = 0; l < k::kLanes; ++l) lanes[size_t(l)] = k::bias_grad_lane(u * k::kLanes + l, g, dy.data());
    partial[size_t(u)] = k::lane_tree_sum(lanes.data());
  }
  std::vector<float> db(size_t(s.c), std::nanf(""));
  for (int c = 0; c < s.c; ++c) k::bias_grad_finish_at(c, g, partial.data(), db.data());
  return db;
}

// Per channel: the exact (double) sum and the sum of magnitudes, the error's scale.
void expect_channel_sums(const Shape& s, const std::vector<float>& dy, const std::vector<float>& db) {
  const int64_t plane = int64_t(s.h) * s.w;
  for (int c = 0; c < s.c; ++c) {
    double sum = 0, mag = 0;
    for (int n = 0; n < s.n; ++n)
      for (int64_t j = 0; j < plane; ++j) {
        const double v = dy[size_t((int64_t(n) * s.c + c) * plane + j)];
        sum += v;
        mag += std::abs(v);
      }
    EXPECT_NEAR(db[size_t(c)], sum, 1e-4 * std::max(mag, 1.0)) << "channel " << c << " of " << s.str();
  }
}

TEST(BiasGradBodies, MatchExactChannelSums) {
  // MNN's shapes at a smaller batch (30 x 53 and 60 x 106: one and two chunks), a plane of exactly
  // one chunk, one just over (a 1-element last chunk), planes smaller than a warp, one sample.
  const Shape shapes[] = {{3, 10, 30, 53}, {2, 7, 60, 106}, {2, 3, 64, 64}, {2, 2, 1, 4097},
                          {4, 5, 3, 7},    {1, 1, 1, 1},    {5, 4, 120, 212}};
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    const auto dy = test::random_values(size_t(s.size()), seed++);
    expect_channel_sums(s, dy, bias_grad_on_host(s, dy));
  }
}

TEST(BiasGradBodies, EveryChunkAndSampleCountsOnce) {
  // All ones: channel c's gradient is exactly n * h * w (integers below 2^24 add exactly in
  // float), so a chunk skipped, summed twice or taken from the wrong plane is an exact miss.
  const Shape s{3, 4, 70, 100};  // 7,000 floats a plane: two chunks, the second partial
  std::vector<float> dy(size_t(s.size()), 1.0f);
  for (int64_t i = 0; i < s.size(); ++i)
    if (i / (int64_t(s.h) * s.w) % s.c == 2) dy[size_t(i)] = 2.0f;  // channel 2 reads only its own planes
  const auto db = bias_grad_on_host(s, dy);
  for (int c = 0; c < s.c; ++c) EXPECT_EQ(db[size_t(c)], (c == 2 ? 2.0f : 1.0f) * 3 * 70 * 100) << "channel " << c;
}

TEST(BiasGradBodies, MatchTheCpuBackendsConvolutionBiasGradient) {
  auto cpu = make_cpu_backend(1);
  ConvDesc d;
  d.in = Shape{4, 6, 30, 53};
  d.out_c = 10;
  d.kh = d.kw = 3;
  same_padding(3, d.pad_top, d.pad_bottom);
  same_padding(3, d.pad_left, d.pad_right);
  const Shape os = d.out();
  const auto x = test::random_values(size_t(d.in.size()), 11);
  const auto dy = test::random_values(size_t(os.size()), 12);
  Tensor tx = test::make_tensor(*cpu, d.in, x), tdy = test::make_tensor(*cpu, os, dy);
  Tensor dw(*cpu, Shape{d.out_c, d.in.c, d.kh, d.kw}), db(*cpu, Shape{1, d.out_c, 1, 1});
  cpu->conv2d_backward_weights(d, tx.data(), tdy.data(), dw.data(), db.data());
  test::expect_close(db.to_host(), bias_grad_on_host(os, dy), 1e-4, "db");
}

}  // namespace
}  // namespace ds::model
