// The benchmark's image classifiers (model/imagenet_models.h): Keras' parameter counts, output
// shapes at the reference inputs (graph only, no activations), a few SGD steps at a tiny input
// on the CPU, and the Net's memory reuse (same numbers, far fewer gradient bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/loss.h"
#include "model/net.h"
#include "model/sgd.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::make_tensor;
using test::random_tensor;

ModelSpec image_spec(const std::string& name, int size, bool aux = false) {
  ModelSpec s;
  s.name = name;
  s.in_channels = 3;
  s.in_h = s.in_w = size;
  s.aux_head = aux;
  return s;
}

// Keras' "Total params": trainable + batch norm moving mean and variance.
int64_t keras_total(Net& net) {
  int64_t buffers = 0;
  for (const Param& b : net.buffers()) buffers += b.value->size();
  return net.parameter_count() + buffers;
}

TEST(ImagenetModels, KerasParameterCountsAndShapes) {
  auto be = make_cpu_backend(1);
  struct Case {
    const char* name;
    int size;
    int64_t keras;
  };
  for (const Case& c : {Case{"resnet50", 224, 25636712}, Case{"resnet101", 224, 44707176},
                        Case{"inception_v3", 299, 23851784}}) {
    Net net(image_spec(c.name, c.size), *be);
    EXPECT_EQ(keras_total(net), c.keras) << c.name;
    EXPECT_EQ(net.output_shape(256), (Shape{256, 1000, 1, 1})) << c.name;
    const std::string summary = net.summary();
    EXPECT_NE(summary.find("with it (Keras' total): " + std::to_string(c.keras)), std::string::npos) << summary;
    EXPECT_NE(summary.find("logits over 1000 classes"), std::string::npos);
  }
}

TEST(ImagenetModels, InceptionAuxHeadAddsTorchvisionsAuxClassifier) {
  auto be = make_cpu_backend(1);
  Net net(image_spec("inception_v3", 299, true), *be);
  // 1x1 conv 768->128 (no bias) + BN(beta, mean, var), 5x5 conv 128->768 + BN, dense 768->1000.
  const int64_t aux = 768 * 128 + 3 * 128 + 128 * 768 * 25 + 3 * 768 + 768 * 1000 + 1000;
  EXPECT_EQ(keras_total(net), 23851784 + aux);
  EXPECT_EQ(net.output_shape(2), (Shape{2, 1000, 1, 1})) << "the output stays the main logits";
  EXPECT_THROW(Net(image_spec("inception_v3", 75, true), *be), UsageError);
}

TEST(ImagenetModels, SpecJsonAndBadInputs) {
  ModelSpec s = image_spec("inception_v3", 299, true);
  s.classes = 10;
  const ModelSpec t = ModelSpec::from_json(s.to_json());
  EXPECT_EQ(t.name, "inception_v3");
  EXPECT_EQ(t.classes, 10);
  EXPECT_TRUE(t.aux_head);
  EXPECT_EQ(ModelSpec::from_json(R"({"name":"resnet50","in_channels":3,"in_h":224,"in_w":224})").classes, 1000);
  auto be = make_cpu_backend(1);
  EXPECT_THROW(Net(image_spec("resnet50", 16), *be), UsageError);
  EXPECT_THROW(Net(image_spec("inception_v3", 74), *be), UsageError);
  ModelSpec none = image_spec("resnet101", 64);
  none.classes = 0;
  EXPECT_THROW(Net(none, *be), UsageError);
}

// A few SGD steps on one fixed batch: the loss is finite and goes down (the whole graph's
// backward is wired; the layers' own gradients are checked against finite differences in
// new_layers_test). Tiny inputs keep it a few seconds on 2 cores.
void expect_training_decreases_loss(const std::string& name, int size) {
  auto be = make_cpu_backend(1);
  Net net(image_spec(name, size), *be);
  net.init(3);
  Sgd sgd(net.params(), *be, 0.9);
  const int n = 2;
  Tensor x = random_tensor(*be, Shape{n, 3, size, size}, 5);
  Tensor labels = make_tensor(*be, Shape{n, 1, 1, 1}, {17.0f, 901.0f});
  Tensor dlogits(*be, Shape{n, 1000, 1, 1});
  std::vector<double> losses;
  for (int step = 0; step < 4; ++step) {
    const Tensor& logits = net.forward(x);
    losses.push_back(softmax_cross_entropy(*be, logits, labels, &dlogits));
    ASSERT_TRUE(std::isfinite(losses.back())) << name << " step " << step;
    net.backward(dlogits);
    sgd.step(0.01);
  }
  EXPECT_LT(losses.back(), losses.front()) << name << ": " << losses[0] << " -> " << losses.back();
}

TEST(ImagenetModels, ResNet50TrainsOnTheCpu) { expect_training_decreases_loss("resnet50", 64); }

// Where one tensor feeds several layers (a residual block's input: its shortcut and its first
// conv), Net::backward sums their gradients into it (net.cpp's written/to_add). Each layer's own
// backward is checked alone (new_layers_test); this checks the sums, on parameters upstream of
// every residual add (the stem conv), in the middle and at the end, against central differences
// of the whole net's loss: a gradient that dropped a path's share would be off by a large part of
// |g| (halving a gradient fails). Two samples at 64 x 64 (the last stage 2 x 2: batch norm's
// statistics over 8 values, not one). The net is far from linear over a step (16 blocks of ReLUs
// and batch norms; the stem's difference at steps 1e-3, 3e-4, 1e-4, 3e-5 read 198, 255, 292, 305
// against 309): the analytic gradient must match the difference at one of 1e-4, 3e-5 and 1e-5
// within 5 % (seen: within 1.5 %), on each parameter's two largest entries.
TEST(ImagenetModels, ResNet50GradientsThroughTheResidualSumsMatchFiniteDifferences) {
  auto be = make_cpu_backend(1);
  Net net(image_spec("resnet50", 64), *be);
  net.init(3);
  Tensor x = random_tensor(*be, Shape{2, 3, 64, 64}, 5);
  Tensor labels = make_tensor(*be, Shape{2, 1, 1, 1}, {17.0f, 901.0f});
  Tensor dlogits(*be, Shape{2, 1000, 1, 1});
  softmax_cross_entropy(*be, net.forward(x), labels, &dlogits);
  net.backward(dlogits);
  auto loss = [&] { return softmax_cross_entropy(*be, net.forward(x), labels, nullptr); };
  const auto& params = net.params();
  for (const size_t k : {size_t(0), params.size() / 2, params.size() - 2}) {
    const Param& p = params[k];
    const auto g = p.grad->to_host();
    auto v = p.value->to_host();
    const auto numeric_at = [&](size_t i, float step) { return test::central_difference(*p.value, v, i, step, loss); };
    for (const size_t i : test::largest_entries(g, 2)) {
      ASSERT_GT(std::abs(g[i]), 0.1) << p.name << ": its largest gradients are too small to check";
      std::string seen;
      bool agrees = false;
      for (float step : {1e-4f, 3e-5f, 1e-5f}) {
        const double num = numeric_at(i, step);
        agrees = agrees || std::abs(g[i] - num) <= 5e-2 * std::abs(g[i]);
        seen += " " + std::to_string(num);
      }
      EXPECT_TRUE(agrees) << p.name << "[" << i << "]: analytic " << g[i] << ", numeric at 1e-4, 3e-5, 1e-5:" << seen;
    }
  }
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_host(), y = b.to_host();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// At batch 256 a ResNet50 step holds every activation (backward reads them) plus, without reuse,
// one gradient buffer per node; with reuse the gradients share a few slots.
TEST(ImagenetModels, MemoryReuseShrinksResNet50Footprint) {
  auto be = make_cpu_backend(1);
  Net net(image_spec("resnet50", 224), *be);
  const int64_t reused = net.activation_bytes(256);
  net.set_memory_reuse(false);
  const int64_t plain = net.activation_bytes(256);
  std::printf("ResNet50 at batch 256: %.2f GiB of activations and gradients without reuse, %.2f GiB with\n",
              plain / 1073741824.0, reused / 1073741824.0);
  // 72.4 GiB -> 29.7 GiB: gradients in a few slots, ReLUs in place.
  EXPECT_LT(double(reused), 0.45 * double(plain));
}

// Reuse changes where buffers live, never a number: a training step (output, every parameter
// gradient, running statistics) and an inference forward match the one-buffer-a-node path bit
// for bit.
TEST(ImagenetModels, MemoryReuseGivesBitIdenticalResults) {
  auto be = make_cpu_backend(1);
  for (const auto& [name, size] : {std::pair<std::string, int>{"resnet50", 32}, {"inception_v3", 75}}) {
    Net a(image_spec(name, size), *be), b(image_spec(name, size), *be);
    a.init(7);
    b.init(7);
    b.set_memory_reuse(false);
    Tensor x = random_tensor(*be, Shape{2, 3, size, size}, 9);
    Tensor dy = random_tensor(*be, Shape{2, 1000, 1, 1}, 11);
    ASSERT_TRUE(bit_equal(a.forward(x), b.forward(x))) << name;
    a.backward(dy);
    b.backward(dy);
    const std::vector<Param> pa = a.params(), pb = b.params();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(bit_equal(*pa[i].grad, *pb[i].grad)) << name << " " << pa[i].name;
    ForwardMode inference;
    inference.training = false;
    a.set_mode(inference);
    b.set_mode(inference);
    EXPECT_TRUE(bit_equal(a.forward(x), b.forward(x))) << name << " inference";
    EXPECT_THROW(a.backward(dy), Error) << "inference reused the activations backward needs";
  }
}

}  // namespace
}  // namespace ds::model
