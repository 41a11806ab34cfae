// Blocked activations (Backend::activation_block, net.cpp): the tensor's element order, the
// Net's plan of which activations are blocked, and a training step of the image nets in the
// blocked layout against the same step in plain NCHW, which the layers' own tests check against
// references and finite differences. tests/CMakeLists.txt runs these again under
// ONEDNN_MAX_CPU_ISA=AVX2, where the block is 8 instead of AVX-512's 16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <random>
#include <string>

#include "io/error.h"
#include "model/layers/add.h"
#include "model/layers/batch_norm.h"
#include "model/layers/concat.h"
#include "model/layers/conv2d.h"
#include "model/layers/global_average_pool.h"
#include "model/layers/pool2d.h"
#include "model/layers/relu.h"
#include "model/net.h"
#include "model_test_util.h"
#include "training_record.h"
#include "support/scoped_env.h"

namespace ds::model {
namespace {

using test::random_tensor;
using test::random_values;

ModelSpec image_spec(const std::string& name, int size) {
  ModelSpec s;
  s.name = name;
  s.in_channels = 3;
  s.in_h = s.in_w = size;
  return s;
}

// The block this CPU's backend keeps; the tests that need one skip without it.
int cpu_block(Backend& be) { return be.activation_block(); }

// Whether /proc/cpuinfo's flags hold every one of these.
bool cpu_flags(const std::vector<std::string>& want) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::vector<std::string> have;
    for (std::string w; words >> w;) have.push_back(w);
    for (const std::string& f : want)
      if (std::find(have.begin(), have.end(), f) == have.end()) return false;
    return true;
  }
  return false;
}

// 16 where the CPU has AVX-512 (oneDNN's avx512_core: F, BW, VL, DQ), 8 on AVX2 or under the
// AVX2 cap (tests/CMakeLists.txt), whatever the CPU has beyond it.
TEST(BlockedActivations, BlockFollowsTheIsa) {
  auto be = make_cpu_backend(1);
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const bool avx2 = cpu_flags({"avx2", "fma"}), avx512 = cpu_flags({"avx512f", "avx512bw", "avx512vl", "avx512dq"});
  if (cap && std::string(cap) == "AVX2") {
    EXPECT_EQ(cpu_block(*be), avx2 ? 8 : 0);
  } else if (!cap) {
    EXPECT_EQ(cpu_block(*be), avx512 ? 16 : avx2 ? 8 : 0);
  }
}

// Element (n, c, h, w) sits at ((n*C/b + c/b)*H*W + h*W + w)*b + c%b in storage, and upload and
// download convert both ways.
TEST(BlockedActivations, TensorStoresNChwBcAndTheHostSeesNchw) {
  auto be = make_cpu_backend(1);
  for (int b : {8, 16}) {
    const Shape s{2, 32, 3, 5};
    const std::vector<float> host = random_values(size_t(s.size()), 3);
    Tensor t(*be, s, DType::kF32, b);
    t.upload(host.data());
    std::vector<float> raw(size_t(s.size()));
    be->copy_to_host(raw.data(), t.storage(), s.size());
    for (int n = 0; n < s.n; ++n)
      for (int c = 0; c < s.c; ++c)
        for (int h = 0; h < s.h; ++h)
          for (int w = 0; w < s.w; ++w) {
            const size_t at = size_t(((n * (s.c / b) + c / b) * s.h * s.w + h * s.w + w) * b + c % b);
            const size_t nchw = size_t(((n * s.c + c) * s.h + h) * s.w + w);
            ASSERT_EQ(raw[at], host[nchw]) << "block " << b << " at (" << n << ", " << c << ", " << h << ", " << w << ")";
          }
    EXPECT_EQ(t.to_host(), host) << "block " << b;
  }
  EXPECT_THROW(Tensor(*be, Shape{1, 24, 2, 2}, DType::kF32, 16), Error) << "16 does not divide 24 channels";
}

// One layer's forward and backward on blocked tensors against the same layer on plain ones: the
// output, every input gradient and every parameter gradient agree within 1e-5 relative (FP32
// rounding of sums taken in another order: measured up to 3e-7). `blocked_out`: whether the
// layer writes blocked (the global pooling writes a plain (N, C, 1, 1)). The plain path is the
// one the layer tests check against references and finite differences.
void expect_layer_matches_plain(Backend& be, Layer& layer, const std::vector<Shape>& in_shapes, bool blocked_out,
                                uint64_t seed) {
  const int b = be.activation_block();
  std::vector<Shape> shapes(in_shapes);
  const Shape out_shape = layer.output_shape(shapes);
  std::vector<std::vector<float>> x_host;
  for (size_t i = 0; i < shapes.size(); ++i) x_host.push_back(random_values(size_t(shapes[i].size()), seed + i));
  const std::vector<float> dy_host = random_values(size_t(out_shape.size()), seed + 100);
  std::vector<std::vector<float>> results[2];  // [plain, blocked]: y, dx..., parameter gradients
  for (int blocked = 0; blocked < 2; ++blocked) {
    const int ib = blocked ? b : 0, ob = blocked && blocked_out ? b : 0;
    std::vector<Tensor> x, dx;
    std::vector<const Tensor*> in;
    std::vector<Tensor*> din;
    for (size_t i = 0; i < shapes.size(); ++i) {
      x.emplace_back(be, shapes[i], DType::kF32, ib);
      x.back().upload(x_host[i].data());
      dx.emplace_back(be, shapes[i], DType::kF32, ib);
    }
    for (size_t i = 0; i < shapes.size(); ++i) {
      in.push_back(&x[i]);
      din.push_back(&dx[i]);
    }
    Tensor y(be, out_shape, DType::kF32, ob), dy(be, out_shape, DType::kF32, ob);
    dy.upload(dy_host.data());
    layer.forward(be, in, y);
    layer.backward(be, in, y, dy, din);
    results[blocked].push_back(y.to_host());
    for (Tensor& d : dx) results[blocked].push_back(d.to_host());
    for (const Param& p : layer.params()) results[blocked].push_back(p.grad->to_host());
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t k = 0; k < results[0].size(); ++k) {
    const std::vector<float>&want = results[0][k], &got = results[1][k];
    double d = 0, n = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      d += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      n += double(want[i]) * want[i];
    }
    EXPECT_LE(std::sqrt(d), 1e-5 * std::sqrt(n) + 1e-12)
        << layer.name() << (k == 0 ? ": output" : k <= shapes.size() ? ": input gradient" : ": parameter gradient") << " " << k;
  }
}

TEST(BlockedActivations, EveryLayerMatchesPlainNchw) {
  auto be = make_cpu_backend(1);
  const int b = cpu_block(*be);
  if (b == 0) GTEST_SKIP() << "this CPU's oneDNN has no blocked layout";
  const Shape s{2, 2 * b, 7, 6};
  Conv2DOptions same, strided, bias_free;
  strided.stride = 2;
  strided.relu = true;
  bias_free.bias = false;
  std::mt19937_64 rng(5);
  Conv2D c1("conv3x3", *be, s.c, b, 3, 3, same), c2("conv3x3_s2_relu", *be, s.c, 3 * b, 3, 3, strided),
      c3("conv1x1_nobias", *be, s.c, 2 * b, 1, 1, bias_free);
  for (Conv2D* c : {&c1, &c2, &c3}) {
    c->init(rng);
    expect_layer_matches_plain(*be, *c, {s}, true, 10);
  }
  BatchNorm bn("bn", *be, s.c);
  expect_layer_matches_plain(*be, bn, {s}, true, 20);
  Pool2D max_pool("max_pool", PoolKind::kMax, 3, 2), avg_pool("avg_pool_same", PoolKind::kAverage, 3, 1, Padding::kSame);
  expect_layer_matches_plain(*be, max_pool, {s}, true, 30);
  expect_layer_matches_plain(*be, avg_pool, {s}, true, 40);
  GlobalAveragePool gap("global_pool");
  expect_layer_matches_plain(*be, gap, {s}, false, 50);
  Concat concat("concat");
  expect_layer_matches_plain(*be, concat, {s, Shape{2, b, 7, 6}, s}, true, 60);
  Add add("add");
  expect_layer_matches_plain(*be, add, {s, s}, true, 70);
  ReLU relu("relu");
  expect_layer_matches_plain(*be, relu, {s}, true, 80);
}

// ResNet's and Inception's activations are blocked from the first convolution to the global
// pooling; the input, the pooled vector and the logits are plain; MNN (channel counts 50, 25, 10,
// 75, 100, 132: none a multiple of 8) stays plain throughout; switched off, nothing is blocked.
TEST(BlockedActivations, PlanKeepsTheImageNetsBlockedAndMnnPlain) {
  auto be = make_cpu_backend(1);
  const int b = cpu_block(*be);
  if (b == 0) GTEST_SKIP() << "this CPU's oneDNN has no blocked layout (neither AVX2 nor AVX-512)";
  for (const auto& [name, size] : {std::pair<std::string, int>{"resnet50", 32}, {"inception_v3", 75}}) {
    Net net(image_spec(name, size), *be);
    int blocked = 0, total = 0;
    for (const std::string& l : net.layer_names()) {
      ++total;
      if (net.activation_block(l) == b) {
        ++blocked;
      } else {
        EXPECT_EQ(net.activation_block(l), 0) << name << " " << l;
      }
    }
    EXPECT_EQ(net.activation_block("avg_pool"), 0) << name;
    EXPECT_EQ(net.activation_block("predictions"), 0) << name;
    // All but the pooled vector and the logits (Inception's first conv has 32 channels: blocked too).
    EXPECT_EQ(blocked, total - 2) << name;
    net.set_blocked_activations(false);
    for (const std::string& l : net.layer_names()) EXPECT_EQ(net.activation_block(l), 0) << name << " " << l;
  }
  Net net(test::mnn_spec(20, 8, 9), *be);
  for (const std::string& l : net.layer_names()) EXPECT_EQ(net.activation_block(l), 0) << "mnn " << l;
}

// The log line train, predict and the benchmark print says which layout a run has: how many
// layers are blocked, or that none is and why (MNN's channels; the switch off).
TEST(BlockedActivations, SummarySaysWhichLayout) {
  auto be = make_cpu_backend(1);
  const int b = cpu_block(*be);
  if (b == 0) GTEST_SKIP() << "this CPU's oneDNN has no blocked layout (neither AVX2 nor AVX-512)";
  const std::string blocked = Net(image_spec("resnet50", 32), *be).blocked_summary();
  EXPECT_NE(blocked.find("layers kept in nChw" + std::to_string(b) + "c"), std::string::npos) << blocked;
  const std::string mnn = Net(test::mnn_spec(20, 8, 9), *be).blocked_summary();
  EXPECT_EQ(mnn, "activations kept in NCHW between the layers (no layer's channels fit nChw" + std::to_string(b) + "c)");
  const ds::test::ScopedEnv off("DOWNSCALE_BLOCKED_ACTIVATIONS", "0");
  const std::string switched = Net(image_spec("resnet50", 32), *be).blocked_summary();
  EXPECT_EQ(switched, "activations kept in NCHW between the layers (DOWNSCALE_BLOCKED_ACTIVATIONS=0)");
}

// Demo with convolutions of b channels (configs/demo.yaml has 16): conv1 writes blocked for conv2,
// conv2 writes NCHW for the upsampling (a reader of NCHW only), up1_conv1 reads and writes NCHW
// between two upsamplings, up2_conv1 reads NCHW and writes blocked for the head, which writes
// NCHW. With DOWNSCALE_FUSE_LAYERS=0 each conv's ReLU is a layer of its own, whose output's layout
// must be its input's: conv2_relu is NCHW for the upsampling, so conv2 is too. Two Adam steps
// against NCHW everywhere: the forward and the loss are the same bit for bit (the convolutions
// run the same blocked kernels either way; no batch norm here); a weight gradient's primitive,
// built for other operand layouts, may sum in another order, so in FP32 the whole record agrees
// within 1e-6 relative (measured 1.1e-7). Under BF16, with 16-bit activations blocked too where
// the CPU has it, every bit agrees (measured).
TEST(BlockedActivations, DemoPlanAndStepsMatchPlain) {
  auto probe = make_cpu_backend(1);
  const int b = cpu_block(*probe);
  if (b == 0) GTEST_SKIP() << "this CPU's oneDNN has no blocked layout";
  ModelSpec spec;
  spec.name = "demo";
  spec.in_channels = 6;
  spec.in_h = 6;
  spec.in_w = 8;
  spec.filters = {b, b, b};
  for (const bool fused : {true, false}) {
    const ds::test::ScopedEnv fuse("DOWNSCALE_FUSE_LAYERS", fused ? "1" : "0");
    for (const bool bf16 : {false, true}) {
      auto be = make_cpu_backend(1);
      if (bf16 && !be->set_math(MathMode::kBf16)) continue;  // no avx512_bf16 here
      const std::string what = std::string(fused ? "fused" : "separate ReLU") + (bf16 ? ", bf16" : ", fp32");
      Net net(spec, *be);
      const std::string r = fused ? "" : "_relu";
      const std::vector<std::pair<std::string, int>> want = {
          {"conv1" + r, b}, {"conv2" + r, 0}, {"up1_conv1" + r, 0}, {"up2_conv1" + r, b}, {"head", 0}};
      for (const auto& [layer, block] : want) EXPECT_EQ(net.activation_block(layer), block) << what << " " << layer;
      if (!fused) {
        EXPECT_EQ(net.activation_block("conv1"), b) << what;
        EXPECT_EQ(net.activation_block("conv2"), 0) << what << ": its ReLU's reader takes NCHW only";
      }
      if (bf16 && fused) {
        EXPECT_EQ(net.activation_dtype("conv1"), DType::kBf16) << what;
      }
      const std::vector<float> blocked =
          test::two_adam_steps(spec, *be, [](Net& n) { n.set_blocked_activations(true); });
      const std::vector<float> plain =
          test::two_adam_steps(spec, *be, [](Net& n) { n.set_blocked_activations(false); });
      ASSERT_EQ(blocked.size(), plain.size());
      size_t differ = 0, first = blocked.size();
      double d = 0, norm = 0;
      for (size_t i = 0; i < blocked.size(); ++i) {
        if (std::memcmp(&blocked[i], &plain[i], sizeof(float)) != 0 && differ++ == 0) first = i;
        d += (double(blocked[i]) - plain[i]) * (double(blocked[i]) - plain[i]);
        norm += double(plain[i]) * plain[i];
      }
      std::printf("%s: %zu of %zu values differ, relative difference %.2e\n", what.c_str(), differ, blocked.size(),
                  std::sqrt(d / norm));
      const size_t forward_and_loss = size_t(net.output_shape(3).size()) + 1;
      EXPECT_GE(first, forward_and_loss) << what << ": the first forward or its loss differs";
      if (bf16) {
        EXPECT_EQ(differ, 0u) << what << ", first at " << first;
      }
      EXPECT_LT(std::sqrt(d / norm), 1e-6) << what;
    }
  }
}

// Sums of squares of a - b and of b, over every element.
void add_squares(const Tensor& a, const Tensor& b, double& diff, double& norm) {
  const std::vector<float> x = a.to_host(), y = b.to_host();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    diff += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    norm += double(y[i]) * y[i];
  }
}

// ||a - b|| / ||b||.
double relative_error(const Tensor& a, const Tensor& b) {
  double d = 0, n = 0;
  add_squares(a, b, d, n);
  return std::sqrt(d / n);
}

// The same over all the tensors together, as one vector: the gradients (grad) or the values.
double relative_error(const std::vector<Param>& a, const std::vector<Param>& b, bool grad) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    add_squares(grad ? *a[i].grad : *a[i].value, grad ? *b[i].grad : *b[i].value, d, n);
  return std::sqrt(d / n);
}

// An inference forward, then a training step, blocked against plain NCHW. Not bit for bit:
// oneDNN's NCHW batch norm sums in another order than its blocked one (FP32 rounding, ~1e-7
// relative a sum); a wrong element order, which this is here to catch, gives differences of order
// one.
// - Inference (fresh statistics: every batch norm is a fixed affine map): the logits within 1e-5,
//   rounding carried through 50-odd well-conditioned layers (measured about 1e-7).
// - Training: the running statistics within 1e-5 (measured 2e-7). The logits and the gradient are
//   ill-conditioned at these sizes: each batch norm divides by its batch's spread, and backward
//   through a hundred of them (N*H*W = 16 values a channel at the last stage) amplifies any
//   rounding, so that moving the input by one ulp moves the gradient by 1.5-2.5 %. They must
//   agree about as well as that: within 10x what a plain step of the input nudged by one ulp
//   differs by (measured 0.7-2.6x: the blocked path rounds differently at every batch norm, the
//   nudge once), which still refuses a wrong element order (differences of order one). Each op's
//   own blocked path is held to 1e-5 above. Compared as whole vectors: a conv bias before a batch
//   norm has a true gradient of 0, and both sides hold rounding noise there.
TEST(BlockedActivations, StepMatchesPlainNchw) {
  auto be = make_cpu_backend(1);
  if (cpu_block(*be) == 0) GTEST_SKIP() << "this CPU's oneDNN has no blocked layout";
  for (const auto& [name, size] : {std::pair<std::string, int>{"resnet50", 64}, {"inception_v3", 107}}) {
    Net blocked(image_spec(name, size), *be), plain(image_spec(name, size), *be), nudged(image_spec(name, size), *be);
    blocked.init(7);
    plain.init(7);
    nudged.init(7);
    plain.set_blocked_activations(false);
    nudged.set_blocked_activations(false);
    ASSERT_GT(blocked.activation_block(blocked.layer_names().front()), 0) << name << ": the first conv writes blocked";
    const Shape xs{4, 3, size, size};
    Tensor x = random_tensor(*be, xs, 9);
    std::vector<float> up = x.to_host();
    for (float& v : up) v = std::nextafter(v, 2.0f);
    Tensor x_up(*be, xs);
    x_up.upload(up.data());
    Tensor dy = random_tensor(*be, Shape{4, 1000, 1, 1}, 11);
    ForwardMode inference, training;
    inference.training = false;
    blocked.set_mode(inference);
    plain.set_mode(inference);
    const double inferred = relative_error(blocked.forward(x), plain.forward(x));
    blocked.set_mode(training);
    plain.set_mode(training);
    const Tensor& want = plain.forward(x);
    const double logits = relative_error(blocked.forward(x), want);
    const double logits_ulp = relative_error(nudged.forward(x_up), want);
    blocked.backward(dy);
    plain.backward(dy);
    nudged.backward(dy);
    const double grads = relative_error(blocked.params(), plain.params(), true);
    const double grads_ulp = relative_error(nudged.params(), plain.params(), true);
    const double stats = relative_error(blocked.buffers(), plain.buffers(), false);
    std::printf("%s: relative differences to plain NCHW, inference logits %.2e, running statistics %.2e; "
                "training logits %.2e and gradient %.2e (plain with the input one ulp up: %.2e and %.2e)\n",
                name.c_str(), inferred, stats, logits, grads, logits_ulp, grads_ulp);
    EXPECT_LT(inferred, 1e-5) << name;
    EXPECT_LT(stats, 1e-5) << name;
    EXPECT_LT(logits, 10 * logits_ulp) << name;
    EXPECT_LT(grads, 10 * grads_ulp) << name;
    EXPECT_LT(grads, 0.2) << name;
  }
}

}  // namespace
}  // namespace ds::model
