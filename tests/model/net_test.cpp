// Net: architectures (shapes, parameter count, names), initialisation, the whole backward pass
// against finite differences, a tiny overfit run, and ModelSpec JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "model/adam.h"
#include "model/cpu/dnnl_backend.h"
#include "model/loss.h"
#include "model/net.h"
#include "model_test_util.h"
#include "support/scoped_env.h"

namespace ds::model {
namespace {

using test::make_tensor;
using test::mnn_spec;
using test::random_tensor;

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

// Net::backward composes every layer's backward; checked here on the entries of every parameter
// whose gradients are largest (entries picked by position were mostly zeros behind dead ReLUs, so
// a zero gradient for every branch passed). Each entry's central difference is taken at two
// steps, and the analytic gradient must match one of them within relative 2e-2 or an absolute
// floor of 2e-4: at 1e-3 a bias (it moves every pixel of its channel) crosses ReLU kinks and
// reads up to 10 % off (seen: 0.0121 against 0.01105, converging to it as the step shrinks); at
// 3e-4 the float-rounded loss of the MNN gives ~1.2e-4 noise in the quotient. A mis-wired layer
// errs by O(|g|) at both. Each parameter must have an entry whose gradient is at least 3x the
// floor at both steps, or its check would accept a zero gradient.
constexpr float kSteps[2] = {1e-3f, 3e-4f};
constexpr double kFloor = 2e-4;
// The loss of the net's output on the check's batch (its targets and mask); d_out its gradient.
using NetLoss = std::function<double(const Tensor& out, const Batch& b, Tensor* d_out)>;
void check_net_gradients(Backend& be, Net& net, int n, int per_param, const NetLoss& net_loss = {}) {
  // Positive biases: with Keras' zero biases, a conv whose inputs are all zero (ReLU'd away or
  // padding) outputs exactly 0, right on the next ReLU's kink, where a finite difference sees
  // half a slope and the analytic gradient none; and with negative ones whole branches go dead.
  uint64_t seed = 100;
  for (const Param& p : net.params())
    if (p.name.size() > 2 && p.name.substr(p.name.size() - 2) == "/b") {
      const auto v = test::random_values(size_t(p.value->size()), seed++, 0.05f, 0.2f);
      p.value->upload(v.data());
    }
  Batch b = make_batch(be, net, n, 5);
  const NetLoss loss_of = net_loss ? net_loss : [&](const Tensor& out, const Batch& on, Tensor* d) {
    return bernoulli_gamma_loss(be, out, on.y, on.mask, d);
  };
  Tensor d(be, net.output_shape(n));
  loss_of(net.forward(b.x), b, &d);
  net.backward(d);
  auto loss = [&]() { return loss_of(net.forward(b.x), b, nullptr); };
  for (const Param& p : net.params()) {
    const auto g = p.grad->to_host();
    auto v = p.value->to_host();
    const auto numeric_at = [&](size_t i, float step) { return test::central_difference(*p.value, v, i, step, loss); };
    double largest = 0;
    for (const size_t i : test::largest_entries(g, size_t(per_param))) {
      const double n1 = numeric_at(i, kSteps[0]), n2 = numeric_at(i, kSteps[1]);
      const auto agrees = [&](double num) { return std::abs(g[i] - num) <= std::max(kFloor, 2e-2 * std::abs(num)); };
      EXPECT_TRUE(agrees(n1) || agrees(n2)) << p.name << "[" << i << "]: analytic " << g[i] << ", numeric " << n1
                                            << " (step " << kSteps[0] << "), " << n2 << " (step " << kSteps[1] << ")";
      largest = std::max(largest, std::min(std::abs(n1), std::abs(n2)));
    }
    EXPECT_GE(largest, 3 * kFloor) << p.name << ": no gradient entry large enough to check against the floor";
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

// The Net's A/B switches take 0 or 1 (or nothing): another value is an error naming the variable
// and its value, not the default run unsaid (env_switch.h).
TEST(ModelNet, MistypedSwitchIsAnErrorNamingIt) {
  auto be = make_cpu_backend(1);
  const auto names = {"DOWNSCALE_FUSE_LAYERS", "DOWNSCALE_ACTIVATIONS16", "DOWNSCALE_BLOCKED_ACTIVATIONS"};
  for (const char* name : names) {
    const ds::test::ScopedEnv typo(name, "maybe");
    try {
      Net net(mnn_spec(2, 3, 4), *be);
      ADD_FAILURE() << name << "=maybe was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(name) + " is 'maybe', expected 0 ("), std::string::npos)
          << e.what();
      EXPECT_EQ(e.code(), kExitUsage) << name << ": a configuration error, as a mistyped key";
    }
  }
  for (const char* name : names)
    for (const char* value : {"0", "1", ""}) {
      const ds::test::ScopedEnv ok(name, value);
      EXPECT_NO_THROW(Net(mnn_spec(2, 3, 4), *be)) << name << "=" << value;
    }
}

// MNN with its convs and ReLUs as one layer each (Conv2D+ReLU, UpSampling2D+Conv2D+ReLU: the
// default) and as separate layers (DOWNSCALE_FUSE_LAYERS=0): same parameters, same output, loss
// and gradients, bit for bit (each fused layer computes the same floats: layers_test.cpp,
// upsample_conv2d_test.cpp; the ReLU layers the net runs in place keep that too: net.cpp).
TEST(ModelNet, MnnFusedLayersMatchSeparateLayers) {
  auto be = make_cpu_backend(2);
  Net separate = [&] {  // the switch is read when the Net is made
    const ds::test::ScopedEnv off("DOWNSCALE_FUSE_LAYERS", "0");
    return Net(mnn_spec(2, 3, 4), *be);
  }();
  Net fused = [&] {
    const ds::test::ScopedEnv on("DOWNSCALE_FUSE_LAYERS", "1");
    return Net(mnn_spec(2, 3, 4), *be);
  }();
  const std::string s_sep = separate.summary(), s_fused = fused.summary();
  EXPECT_NE(s_sep.find("up2_conv1_relu"), std::string::npos) << s_sep;
  EXPECT_NE(s_sep.find("up1_conv1_relu"), std::string::npos) << s_sep;
  EXPECT_EQ(s_fused.find("_relu"), std::string::npos) << s_fused;
  EXPECT_NE(s_fused.find("UpSampling2D+Conv2D+ReLU"), std::string::npos) << s_fused;
  separate.init(8);
  fused.init(8);
  auto ps = separate.params(), pf = fused.params();
  ASSERT_EQ(ps.size(), pf.size());
  uint64_t seed = 200;
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_EQ(ps[i].name, pf[i].name);
    ASSERT_EQ(ps[i].value->to_host(), pf[i].value->to_host()) << ps[i].name;
    if (ps[i].name.size() > 2 && ps[i].name.substr(ps[i].name.size() - 2) == "/b") {
      // Keras' zero biases leave exact zeros on the ReLUs' kinks: random ones make them cut.
      const auto v = test::random_values(size_t(ps[i].value->size()), seed++, -0.2f, 0.2f);
      ps[i].value->upload(v.data());
      pf[i].value->upload(v.data());
    }
  }
  Batch b = make_batch(*be, fused, 2, 9);
  const Shape os = fused.output_shape(2);
  Tensor ds(*be, os), df(*be, os);
  const Tensor& ys = separate.forward(b.x);
  const double ls = bernoulli_gamma_loss(*be, ys, b.y, b.mask, &ds);
  const auto out_s = ys.to_host();
  const Tensor& yf = fused.forward(b.x);
  const double lf = bernoulli_gamma_loss(*be, yf, b.y, b.mask, &df);
  EXPECT_EQ(out_s, yf.to_host());
  EXPECT_EQ(ls, lf);
  separate.backward(ds);
  fused.backward(df);
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto g = ps[i].grad->to_host();
    EXPECT_EQ(g, pf[i].grad->to_host()) << ps[i].name;
    EXPECT_TRUE(std::any_of(g.begin(), g.end(), [](float v) { return v != 0.0f; })) << ps[i].name;
  }
}

// Lanes (MNN's five branches side by side, net.cpp): the CPU backend with lanes() > 0 that
// records where each op was queued. What a backend with streams relies on: each branch's convs
// on its own lane, forward and backward; a fork before the branches and a join before anything
// of lane 0 (the concat); the branches' layer_done hooks only after the join; and no buffer one
// lane writes in backward shared with one another lane reads or writes (the gradient slots are
// kept for the whole region). The math is the CPU's, so lanes on and off agree bit for bit.
class LaneRecorder : public DnnlBackend {
 public:
  LaneRecorder() : DnnlBackend(2) {}
  int lanes() const override { return 2; }
  void fork_lanes() override { trace.push_back("fork"); }
  void set_lane(int lane) override { lane_ = lane; }
  void join_lanes() override {
    trace.push_back("join");
    lane_ = 0;
  }
  void conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) override {
    trace.push_back("conv@" + std::to_string(lane_));
    DnnlBackend::conv2d_relu_forward(d, x, w, b, y);
  }
  void copy_channels(const Shape& src, const float* x, const Shape& dst, int offset, float* y) override {
    trace.push_back("concat@" + std::to_string(lane_));
    DnnlBackend::copy_channels(src, x, dst, offset, y);
  }
  void conv2d_backward(const ConvDesc& d, const float* x, const float* y, const float* dy, const float* w, float* dx,
                       float* dw, float* db, float* scratch) override {
    trace.push_back("dconv@" + std::to_string(lane_));
    const int64_t no = d.out().size(), ni = d.in.size();
    writes.push_back({lane_, {{dx, dx ? ni : 0}, {scratch, y ? no : 0}}});
    reads.push_back({lane_, {{dy, no}, {x, ni}, {y, y ? no : 0}}});
    Backend::conv2d_backward(d, x, y, dy, w, dx, dw, db, scratch);
  }
  struct Range {
    const float* p;
    int64_t n;
  };
  struct Access {
    int lane;
    std::vector<Range> ranges;
  };
  std::vector<std::string> trace;
  std::vector<Access> writes, reads;

 private:
  int lane_ = 0;
};

bool overlap(const LaneRecorder::Range& a, const LaneRecorder::Range& b) {
  return a.p && b.p && a.n > 0 && b.n > 0 && a.p < b.p + b.n && b.p < a.p + a.n;
}

// A small MNN twice on one backend, with lanes and without (same weights), one batch of 2 for
// both, and a loss gradient buffer for each.
struct LanesAndPlain {
  Net lanes, plain;
  Batch b;
  Tensor dl, dp;
  explicit LanesAndPlain(Backend& be)
      : lanes(mnn_spec(2, 3, 4), be),
        plain(mnn_spec(2, 3, 4), be),
        b(make_batch(be, lanes, 2, 3)),
        dl(be, lanes.output_shape(2)),
        dp(be, lanes.output_shape(2)) {
    plain.set_lanes(false);
    lanes.init(5);
    plain.init(5);
  }
};

TEST(ModelNet, MnnBranchesRunOnLanesWithTheirOwnBuffers) {
  LaneRecorder be;
  LanesAndPlain nets(be);
  Net &lanes = nets.lanes, &plain = nets.plain;
  Batch& b = nets.b;
  Tensor &dl = nets.dl, &dp = nets.dp;
  const auto out_plain = plain.forward(b.x).to_host();
  bernoulli_gamma_loss(be, plain.forward(b.x), b.y, b.mask, &dp);
  plain.backward(dp);
  be.trace.clear();
  be.writes.clear();
  be.reads.clear();

  const Tensor& yl = lanes.forward(b.x);
  EXPECT_EQ(yl.to_host(), out_plain);
  bernoulli_gamma_loss(be, yl, b.y, b.mask, &dl);
  // Forward: fork, 15 branch convs, three a lane in branch order, join, then the concat on lane 0.
  std::vector<std::string> want = {"fork"};
  for (int lane = 1; lane <= 5; ++lane)
    for (int k = 0; k < 3; ++k) want.push_back("conv@" + std::to_string(lane));
  want.push_back("join");
  for (int k = 0; k < 5; ++k) want.push_back("concat@0");
  ASSERT_GE(be.trace.size(), want.size());
  EXPECT_EQ(std::vector<std::string>(be.trace.begin(), be.trace.begin() + long(want.size())), want);

  be.trace.clear();
  std::vector<std::string> hooks;
  lanes.backward(dl, [&](const std::vector<Param>&) {
    hooks.push_back(lanes.backward_layer());
    be.trace.push_back("hook:" + lanes.backward_layer());
  });
  // Backward: the branches in reverse list order on their lanes, then the join, then their hooks.
  const auto at = [&](const std::string& e) { return std::find(be.trace.begin(), be.trace.end(), e) - be.trace.begin(); };
  const auto fork = at("fork"), join = at("join");
  ASSERT_LT(fork, join);
  int lane_convs = 0;
  for (long i = fork + 1; i < join; ++i) {
    EXPECT_EQ(be.trace[size_t(i)].rfind("dconv@", 0), 0u) << be.trace[size_t(i)] << ": only branch work between fork and join";
    lane_convs += be.trace[size_t(i)] != "dconv@0";
  }
  EXPECT_EQ(lane_convs, 15);
  EXPECT_LT(at("hook:concat"), fork);
  EXPECT_GT(at("hook:branch2_conv1"), join);
  EXPECT_GT(at("hook:branch9_conv3"), join);
  EXPECT_LT(at("hook:branch9_conv3"), at("hook:branch2_conv1")) << "hooks keep the backward order";
  EXPECT_EQ(std::count_if(hooks.begin(), hooks.end(), [](const std::string& h) { return h.rfind("branch", 0) == 0; }),
            15)
      << "one hook per branch layer";
  // No lane writes what another lane reads or writes.
  for (const auto& w : be.writes)
    for (const auto* others : {&be.writes, &be.reads})
      for (const auto& o : *others) {
        if (w.lane == 0 || o.lane == 0 || w.lane == o.lane) continue;
        for (const auto& rw : w.ranges)
          for (const auto& ro : o.ranges)
            EXPECT_FALSE(overlap(rw, ro)) << "lane " << w.lane << " writes a buffer lane " << o.lane << " uses";
      }
  for (size_t i = 0; i < plain.params().size(); ++i)
    EXPECT_EQ(lanes.params()[i].grad->to_host(), plain.params()[i].grad->to_host()) << plain.params()[i].name;
}

// Deferred weight passes (Backend::defer_weight_passes, net.cpp): a backend that accepts them
// is asked once, at the start of a backward with a lane region, and told to stop right after
// that region's join; the hooks of the layers before the region (the head and the decoder, whose
// weight gradients then run beside the branches) come only after the join, in backward order;
// a backend that declines changes nothing, and a net without lanes never asks.
class DeferRecorder : public LaneRecorder {
 public:
  bool accept = true;
  bool defer_weight_passes(bool on) override {
    trace.push_back(on ? "defer:on" : "defer:off");
    return on && accept;
  }
};

TEST(ModelNet, DeferredWeightPassesWaitForTheRegionsJoin) {
  for (const bool accept : {true, false}) {
    DeferRecorder be;
    be.accept = accept;
    LanesAndPlain nets(be);
    Net &lanes = nets.lanes, &plain = nets.plain;
    Batch& b = nets.b;
    Tensor &dl = nets.dl, &dp = nets.dp;
    bernoulli_gamma_loss(be, plain.forward(b.x), b.y, b.mask, &dp);
    be.trace.clear();
    plain.backward(dp);
    EXPECT_EQ(std::count(be.trace.begin(), be.trace.end(), "defer:on"), 0) << "lanes off: no region, never asked";
    bernoulli_gamma_loss(be, lanes.forward(b.x), b.y, b.mask, &dl);
    be.trace.clear();
    lanes.backward(dl, [&](const std::vector<Param>&) { be.trace.push_back("hook:" + lanes.backward_layer()); });
    const auto at = [&](const std::string& e) {
      return std::find(be.trace.begin(), be.trace.end(), e) - be.trace.begin();
    };
    const long n = long(be.trace.size());
    ASSERT_EQ(at("defer:on"), 0) << "asked before any backward op";
    EXPECT_EQ(std::count(be.trace.begin(), be.trace.end(), "defer:on"), 1);
    const auto join = at("join");
    ASSERT_LT(join, n);
    for (const char* decoder : {"hook:head", "hook:up2_conv1", "hook:up1_conv1", "hook:concat"}) {
      ASSERT_LT(at(decoder), n) << decoder;
      if (accept)
        EXPECT_GT(at(decoder), join) << decoder << ": its weights may still be running before the join";
      else
        EXPECT_LT(at(decoder), at("fork")) << decoder << ": declined, the hook comes at once";
    }
    if (accept) {
      EXPECT_EQ(at("defer:off"), join + 1) << "stopped right after the join";
      EXPECT_LT(at("hook:head"), at("hook:up2_conv1")) << "hooks keep the backward order";
      EXPECT_LT(at("hook:up1_conv1"), at("hook:branch9_conv3")) << "decoder hooks before the region's";
    } else {
      EXPECT_EQ(at("defer:off"), n) << "declined: nothing to stop";
    }
    for (size_t i = 0; i < plain.params().size(); ++i)
      EXPECT_EQ(lanes.params()[i].grad->to_host(), plain.params()[i].grad->to_host()) << plain.params()[i].name;
  }
}

// A net without lanes (the demo CNN) never asks for deferred weight passes.
TEST(ModelNet, NoLaneRegionNoDeferredWeightPasses) {
  DeferRecorder be;
  Net net(demo_spec(2, 4, 4, {4, 4, 4}), be);
  net.init(5);
  Tensor x = random_tensor(be, Shape{2, 2, 4, 4}, 6);
  const Tensor& y = net.forward(x);
  Tensor d(be, y.shape());
  be.fill(d.data(), d.size(), 1.0f);
  be.trace.clear();
  net.backward(d);
  EXPECT_EQ(std::count(be.trace.begin(), be.trace.end(), "defer:on"), 0);
  EXPECT_EQ(std::count(be.trace.begin(), be.trace.end(), "join"), 0);
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

// --- DeepESD ---

using test::coast_mask;

ModelSpec deepesd_spec(int c, int h, int w, int oh, int ow, std::string loss = "bernoulli_gamma") {
  ModelSpec s = mnn_spec(c, h, w);
  s.name = "deepesd";
  s.out_h = oh;
  s.out_w = ow;
  s.land_mask = coast_mask(oh, ow);
  s.loss = std::move(loss);
  return s;
}

// Parameters by hand: convs 3x3 (C->50, 50->25, 25->10) with biases, then K dense heads of L
// units over the 10*H*W flattened features, with biases.
TEST(ModelNet, DeepEsdShapesAndParameterCount) {
  auto be = make_cpu_backend(1);
  const ModelSpec s = deepesd_spec(20, 6, 8, 9, 11);
  int64_t land = 0;
  for (uint8_t m : s.land_mask) land += m;
  ASSERT_GT(land, 20);
  ASSERT_LT(land, 99);
  Net net(s, *be);
  const int64_t convs = (20 * 9 * 50 + 50) + (50 * 9 * 25 + 25) + (25 * 9 * 10 + 10);
  const int64_t heads = 3 * (10 * 6 * 8 * land + land);
  EXPECT_EQ(net.parameter_count(), convs + heads);
  EXPECT_EQ(net.output_shape(5), (Shape{5, 3, 9, 11}));
  EXPECT_EQ(find_param(net, "heads/W").value->shape(), (Shape{int(3 * land), 480, 1, 1}));
  EXPECT_EQ(find_param(net, "conv3/W").value->shape(), (Shape{10, 25, 3, 3}));
  EXPECT_NE(net.summary().find("ScatterToGrid"), std::string::npos);
  // Gaussian and MSE heads: 2 and 1 channels, no sigmoid.
  EXPECT_EQ(Net(deepesd_spec(20, 6, 8, 9, 11, "gaussian"), *be).output_shape(1), (Shape{1, 2, 9, 11}));
  EXPECT_EQ(Net(deepesd_spec(20, 6, 8, 9, 11, "mse"), *be).parameter_count(), convs + (480 * land + land));
  // Without the grid or with a mask of the wrong size: usage errors naming the model.
  ModelSpec bad = s;
  bad.land_mask.pop_back();
  EXPECT_THROW(Net(bad, *be), UsageError);
  bad.out_h = 0;
  EXPECT_THROW(Net(bad, *be), UsageError);
}

TEST(ModelNet, DeepEsdOceanIsFilledAndBackwardMatchesFiniteDifferences) {
  auto be = make_cpu_backend(2);
  const ModelSpec s = deepesd_spec(2, 3, 4, 5, 6);
  Net net(s, *be);
  net.init(8);
  Tensor x = random_tensor(*be, Shape{2, 2, 3, 4}, 3);
  const auto out = net.forward(x).to_host();
  const size_t hw = 30;
  for (size_t n = 0; n < 2; ++n)
    for (size_t i = 0; i < hw; ++i)
      if (!s.land_mask[i]) {
        EXPECT_EQ(out[(n * 3 + 0) * hw + i], 0.5f) << "ocean p = sigmoid(0)";
        EXPECT_EQ(out[(n * 3 + 1) * hw + i], 0.0f);
      }
  check_net_gradients(*be, net, 2, 3);
}

// The overfit of DemoOverfitsTinyBatch with DeepESD: it must memorise the rain pattern of two
// samples at the land points (the dense heads see every input pixel, so this is easy for it).
TEST(ModelNet, DeepEsdOverfitsTinyBatch) {
  auto be = make_cpu_backend(2);
  const ModelSpec s = deepesd_spec(3, 4, 4, 8, 9);
  Net net(s, *be);
  net.init(7);
  const Shape os = net.output_shape(2);
  const size_t hw = size_t(os.h) * os.w;
  std::vector<float> y(2 * hw), mask(hw);
  for (size_t i = 0; i < hw; ++i) mask[i] = s.land_mask[i];
  for (size_t n = 0; n < 2; ++n)
    for (int r = 0; r < os.h; ++r)
      for (int c = 0; c < os.w; ++c) {
        const size_t i = size_t(r * os.w + c);
        y[n * hw + i] = !s.land_mask[i] ? std::nanf("")
                        : std::sin(0.5 * r + 0.3 * c + 2.0 * n) > 0 ? 1.0f + 0.5f * n : 0.0f;
      }
  Tensor x = random_tensor(*be, Shape{2, 3, 4, 4}, 11);
  Tensor yt = make_tensor(*be, Shape{2, 1, os.h, os.w}, y), mt = make_tensor(*be, Shape{1, 1, os.h, os.w}, mask);
  Adam adam(net.params(), *be);
  Tensor d(*be, os);
  const int steps = 150;
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    const double l = bernoulli_gamma_loss(*be, net.forward(x), yt, mt, &d);
    if (step == 0) first = l;
    last = l;
    net.backward(d);
    adam.step(3e-3 * (1.0 - double(step) / steps));  // linear decay: see DemoOverfitsTinyBatch
  }
  EXPECT_LT(last, first - 1.5) << "first " << first << " last " << last;
  const auto out = net.forward(x).to_host();
  int wrong = 0, valid = 0;
  for (size_t n = 0; n < 2; ++n)
    for (size_t i = 0; i < hw; ++i)
      if (s.land_mask[i]) {
        ++valid;
        wrong += (out[n * 3 * hw + i] > 0.5f) != (y[n * hw + i] > 0.0f);
      }
  EXPECT_LE(wrong, valid / 20) << "rain probability on the wrong side of 0.5 at " << wrong << " of " << valid;
}

// The demo net with the Gaussian and MSE heads: channels follow the loss, and the whole
// backward through the new losses matches finite differences.
TEST(ModelNet, DemoWithGaussianAndMseHeads) {
  auto be = make_cpu_backend(2);
  for (const char* loss : {"gaussian", "mse"}) {
    ModelSpec s = demo_spec(2, 3, 4, {3, 4, 3});
    s.loss = loss;
    Net net(s, *be);
    net.init(3);
    const LossKind kind = parse_loss(loss);
    EXPECT_EQ(net.output_shape(2).c, loss_channels(kind));
    check_net_gradients(*be, net, 2, 2, [&](const Tensor& out, const Batch& b, Tensor* d) {
      return masked_loss(*be, kind, out, b.y, b.mask, d);
    });
  }
}

TEST(ModelNet, DeepEsdSpecJsonKeepsGridAndMask) {
  const ModelSpec s = deepesd_spec(7, 30, 53, 117, 209, "gaussian");
  const ModelSpec t = ModelSpec::from_json(s.to_json());
  EXPECT_EQ(t.name, "deepesd");
  EXPECT_EQ(t.loss, "gaussian");
  EXPECT_EQ(t.out_h, 117);
  EXPECT_EQ(t.out_w, 209);
  EXPECT_EQ(t.land_mask, s.land_mask);
  EXPECT_LT(s.to_json().size(), 2000u) << "run lengths keep the mask small";
  // A mask whose runs do not cover the grid is bad input, not a crash.
  EXPECT_THROW(ModelSpec::from_json(R"({"name":"deepesd","in_channels":1,"in_h":1,"in_w":1,"out_h":2,"out_w":2,)"
                                    R"("land_mask_runs":[1,1]})"),
               InputError);
  // Checkpoints written before these fields existed read as Bernoulli-Gamma.
  EXPECT_EQ(ModelSpec::from_json(R"({"name":"mnn","in_channels":1,"in_h":1,"in_w":1})").loss, "bernoulli_gamma");
}

}  // namespace
}  // namespace ds::model
