// Net: architectures (shapes, parameter count, names), initialisation, the whole backward pass
// against finite differences, a tiny overfit run, and ModelSpec JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "model/adam.h"
#include "model/loss.h"
#include "model/net.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::make_tensor;
using test::random_tensor;

ModelSpec mnn_spec(int c, int h, int w) {
  ModelSpec s;
  s.name = "mnn";
  s.in_channels = c;
  s.in_h = h;
  s.in_w = w;
  return s;
}

ModelSpec demo_spec(int c, int h, int w, std::vector<int> filters) {
  ModelSpec s = mnn_spec(c, h, w);
  s.name = "demo";
  s.filters = std::move(filters);
  return s;
}

Param find_param(Net& net, const std::string& name) {
  for (const Param& p : net.params())
    if (p.name == name) return p;
  ADD_FAILURE() << "no parameter " << name;
  return Param{};
}

// The reference MNN at its reference input: shapes only, no forward (49 GFLOP a sample).
TEST(ModelNet, MnnShapeAndParameterCount) {
  auto be = make_cpu_backend(1);
  Net net(mnn_spec(20, 30, 53), *be);
  EXPECT_EQ(net.output_shape(4), (Shape{4, 3, 117, 209}));
  EXPECT_EQ(net.parameter_count(), 1615671);
  int64_t total = 0;
  std::set<std::string> names;
  for (const Param& p : net.params()) {
    total += p.value->size();
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate " << p.name;
    EXPECT_EQ(p.grad->shape(), p.value->shape()) << p.name;
  }
  EXPECT_EQ(total, 1615671);
  EXPECT_EQ(find_param(net, "branch3_conv2/W").value->shape(), (Shape{25, 50, 3, 3}));
  EXPECT_EQ(find_param(net, "branch2_conv1/W").value->shape(), (Shape{50, 20, 2, 2}));
  EXPECT_EQ(find_param(net, "up1_conv1/W").value->shape(), (Shape{50, 50, 5, 5}));
  EXPECT_EQ(find_param(net, "up2_conv1/W").value->shape(), (Shape{132, 100, 8, 8}));
  EXPECT_EQ(find_param(net, "head/W").value->shape(), (Shape{3, 132, 4, 4}));
  EXPECT_EQ(find_param(net, "head/b").value->shape(), (Shape{1, 3, 1, 1}));
  const std::string summary = net.summary();
  EXPECT_NE(summary.find("Total params: 1615671"), std::string::npos) << summary;
  EXPECT_NE(summary.find("concat"), std::string::npos);
}

TEST(ModelNet, DemoShapes) {
  auto be = make_cpu_backend(2);
  Net net(demo_spec(2, 5, 6, {4, 4, 4}), *be);
  net.init(1);
  EXPECT_EQ(net.output_shape(3), (Shape{3, 3, 17, 21}));
  Tensor x = random_tensor(*be, Shape{3, 2, 5, 6}, 1);
  EXPECT_EQ(net.forward(x).shape(), (Shape{3, 3, 17, 21}));
  Tensor wrong = random_tensor(*be, Shape{3, 2, 6, 5}, 1);
  EXPECT_THROW(net.forward(wrong), Error);
}

TEST(ModelNet, BadSpecsAreUsageErrors) {
  auto be = make_cpu_backend(1);
  EXPECT_THROW(Net(demo_spec(2, 5, 6, {4, 4}), *be), UsageError);
  ModelSpec s = mnn_spec(2, 5, 6);
  s.name = "resnet";
  EXPECT_THROW(Net(s, *be), UsageError);
  EXPECT_THROW(Net(mnn_spec(0, 5, 6), *be), UsageError);
}

TEST(ModelNet, GlorotInitIsSeededAndBounded) {
  auto be = make_cpu_backend(1);
  Net a(demo_spec(2, 4, 4, {4, 5, 6}), *be), b(demo_spec(2, 4, 4, {4, 5, 6}), *be);
  a.init(42);
  b.init(42);
  auto pa = a.params(), pb = b.params();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i].value->to_host(), pb[i].value->to_host()) << pa[i].name;
  // conv1: fan_in 2*9, fan_out 4*9. The head counts one output channel (three Keras heads).
  const std::map<std::string, double> limits = {{"conv1/W", std::sqrt(6.0 / (18 + 36))},
                                                {"head/W", std::sqrt(6.0 / (6 * 16 + 16))}};
  for (const auto& [name, limit] : limits) {
    const auto w = find_param(a, name).value->to_host();
    double max_abs = 0;
    for (float v : w) max_abs = std::max(max_abs, double(std::abs(v)));
    EXPECT_LE(max_abs, limit) << name;
    EXPECT_GT(max_abs, 0.8 * limit) << name;  // many draws: the largest is near the limit
  }
  for (float v : find_param(a, "head/b").value->to_host()) EXPECT_EQ(v, 0.0f);
  b.init(43);
  EXPECT_NE(find_param(a, "conv1/W").value->to_host(), find_param(b, "conv1/W").value->to_host());
}

// Loss of the whole network on a fixed batch, for finite differences.
struct Batch {
  Tensor x, y, mask;
};

Batch make_batch(Backend& be, const Net& net, int n, uint64_t seed) {
  const ModelSpec& s = net.spec();
  const Shape os = net.output_shape(n);
  std::vector<float> y = test::random_values(size_t(n) * os.h * os.w, seed + 1, 0.0f, 4.0f);
  for (size_t i = 0; i < y.size(); i += 2) y[i] = 0.0f;  // half dry
  std::vector<float> mask(size_t(os.h) * os.w, 1.0f);
  for (size_t i = 0; i < mask.size(); i += 5) mask[i] = 0.0f;  // some ocean
  return Batch{random_tensor(be, Shape{n, s.in_channels, s.in_h, s.in_w}, seed),
               make_tensor(be, Shape{n, 1, os.h, os.w}, y), make_tensor(be, Shape{1, 1, os.h, os.w}, mask)};
}

// Net::backward composes every layer's backward; checked here on a few entries of every
// parameter. Step 1e-3 on float weights: the loss is O(1) and its float-rounded inputs give
// ~1e-4 noise in the quotient; curvature (lgamma, 1/p) gives ~1e-5. Relative 2e-2 with an
// absolute floor of 1e-3 passes that and fails any mis-wired layer (errors of O(|g|)).
constexpr float kStep = 1e-3f;
void check_net_gradients(Backend& be, Net& net, int n, int per_param) {
  // Non-zero biases: with Keras' zero biases, a conv whose inputs are all zero (ReLU'd away or
  // padding) outputs exactly 0, right on the next ReLU's kink, where a finite difference sees
  // half a slope and the analytic gradient none.
  uint64_t seed = 100;
  for (const Param& p : net.params())
    if (p.name.size() > 2 && p.name.substr(p.name.size() - 2) == "/b") {
      const auto v = test::random_values(size_t(p.value->size()), seed++, 0.05f, 0.2f, true);
      p.value->upload(v.data());
    }
  Batch b = make_batch(be, net, n, 5);
  const Shape os = net.output_shape(n);
  Tensor d(be, os);
  bernoulli_gamma_loss(be, net.forward(b.x), b.y, b.mask, &d);
  net.backward(d);
  auto loss = [&]() { return bernoulli_gamma_loss(be, net.forward(b.x), b.y, b.mask, nullptr); };
  for (const Param& p : net.params()) {
    const auto g = p.grad->to_host();
    auto v = p.value->to_host();
    for (int k = 0; k < per_param; ++k) {
      const size_t i = size_t(k) * v.size() / size_t(per_param);
      const float x = v[i];
      v[i] = x + kStep;
      const float hi = v[i];
      p.value->upload(v.data());
      const double lp = loss();
      v[i] = x - kStep;
      const float lo = v[i];
      p.value->upload(v.data());
      const double lm = loss();
      v[i] = x;
      p.value->upload(v.data());
      const double numeric = (lp - lm) / (double(hi) - double(lo));
      EXPECT_NEAR(g[i], numeric, std::max(1e-3, 2e-2 * std::abs(numeric))) << p.name << "[" << i << "]";
    }
  }
}

TEST(ModelNet, DemoBackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend(2);
  Net net(demo_spec(2, 3, 4, {3, 4, 3}), *be);
  net.init(3);
  check_net_gradients(*be, net, 2, 4);
}

// The MNN at a tiny input: five branches through the concat, every kernel size.
TEST(ModelNet, TinyMnnForwardAndBackward) {
  auto be = make_cpu_backend(2);
  Net net(mnn_spec(2, 2, 3), *be);
  net.init(4);
  Tensor x = random_tensor(*be, Shape{1, 2, 2, 3}, 9);
  EXPECT_EQ(net.forward(x).shape(), net.output_shape(1));
  EXPECT_EQ(net.output_shape(1), (Shape{1, 3, 5, 9}));
  check_net_gradients(*be, net, 1, 2);
}

// A smaller last batch reuses the buffers and primitives of a bigger one; sample results must
// not depend on the batch they are in.
TEST(ModelNet, BatchSizeCanChange) {
  auto be = make_cpu_backend(2);
  Net net(demo_spec(2, 4, 4, {4, 4, 4}), *be);
  net.init(5);
  Tensor x3 = random_tensor(*be, Shape{3, 2, 4, 4}, 6);
  const auto y3 = net.forward(x3).to_host();
  auto xv = x3.to_host();
  xv.resize(xv.size() / 3);
  Tensor x1 = make_tensor(*be, Shape{1, 2, 4, 4}, xv);
  const auto y1 = net.forward(x1).to_host();
  ASSERT_EQ(y1.size() * 3, y3.size());
  // Same sample, same primitives' arithmetic per output: tiny differences only from a
  // different work split; 1e-5 absolute on O(1) outputs.
  for (size_t i = 0; i < y1.size(); ++i) EXPECT_NEAR(y1[i], y3[i], 1e-5);
}

// The demo net must be able to memorise a tiny batch: rain in smooth blobs (as real rain), a
// per-sample wet amount, ocean points with NaN targets.
TEST(ModelNet, DemoOverfitsTinyBatch) {
  auto be = make_cpu_backend(2);
  Net net(demo_spec(3, 4, 4, {8, 8, 8}), *be);
  net.init(7);
  const Shape os = net.output_shape(2);
  const size_t hw = size_t(os.h) * os.w;
  std::vector<float> y(2 * hw), mask(hw, 1.0f);
  for (size_t n = 0; n < 2; ++n)
    for (int r = 0; r < os.h; ++r)
      for (int c = 0; c < os.w; ++c)
        y[n * hw + size_t(r * os.w + c)] = std::sin(0.5 * r + 0.3 * c + 2.0 * n) > 0 ? 1.0f + 0.5f * n : 0.0f;
  for (size_t i = 0; i < hw; i += 5) {
    mask[i] = 0.0f;
    y[i] = std::nanf("");
  }
  Tensor x = random_tensor(*be, Shape{2, 3, 4, 4}, 11);
  Tensor yt = make_tensor(*be, Shape{2, 1, os.h, os.w}, y), mt = make_tensor(*be, Shape{1, 1, os.h, os.w}, mask);
  Adam adam(net.params(), *be);
  Tensor d(*be, os);
  const int steps = 200;
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    const double l = bernoulli_gamma_loss(*be, net.forward(x), yt, mt, &d);
    if (step == 0) first = l;
    last = l;
    net.backward(d);
    // Linear decay to 0: memorising makes the Gamma part ever sharper (alpha grows without
    // bound on exact targets), so a constant rate ends in spikes that say nothing about the code.
    adam.step(3e-3 * (1.0 - double(step) / steps));
  }
  // An NLL can go negative, so "a large factor" is in likelihood: a drop of 1.5 nats per point
  // is the batch's likelihood growing e^1.5 ~ 4.5-fold per point (1.35 -> about -0.6 here).
  EXPECT_LT(last, first - 1.5) << "first " << first << " last " << last;
  const auto out = net.forward(x).to_host();
  int wrong = 0, valid = 0;
  for (size_t n = 0; n < 2; ++n)
    for (size_t i = 0; i < hw; ++i)
      if (mask[i] > 0.5f) {
        ++valid;
        wrong += (out[n * 3 * hw + i] > 0.5f) != (y[n * hw + i] > 0.0f);
      }
  // 95%: the blob edges, one pixel wide, are the hard points (3 of 270 wrong when written).
  EXPECT_LE(wrong, valid / 20) << "rain probability on the wrong side of 0.5 at " << wrong << " of " << valid;
}

TEST(ModelNet, SpecJsonRoundTrip) {
  ModelSpec s = demo_spec(7, 30, 53, {16, 32, 8});
  ModelSpec t = ModelSpec::from_json(s.to_json());
  EXPECT_EQ(t.name, "demo");
  EXPECT_EQ(t.in_channels, 7);
  EXPECT_EQ(t.in_h, 30);
  EXPECT_EQ(t.in_w, 53);
  EXPECT_EQ(t.filters, (std::vector<int>{16, 32, 8}));
  EXPECT_EQ(ModelSpec::from_json(mnn_spec(20, 30, 53).to_json()).name, "mnn");
  EXPECT_THROW(ModelSpec::from_json("{not json"), InputError);
  EXPECT_THROW(ModelSpec::from_json("{\"name\": \"mnn\"}"), InputError);
  EXPECT_THROW(ModelSpec::from_json("{\"name\": 3, \"in_channels\": 1, \"in_h\": 1, \"in_w\": 1}"), InputError);
  EXPECT_THROW(ModelSpec::from_json("[1, 2]"), InputError);
}

}  // namespace
}  // namespace ds::model
