// ResNet50/101 (He et al. 2016) as keras.applications.ResNet50/101: a 7x7/2 stem, a 3x3/2 max
// pool, four stages of bottleneck blocks (1x1 reduce, 3x3, 1x1 expand to 4x, + shortcut),
// global average pooling and a dense layer. Convs carry biases and every conv is followed by batch
// norm (eps 1.001e-5), as in Keras; the layer names are Keras' (conv2_block1_1_conv, ...).
//
// One deliberate difference: the stride of a stage's first block sits in its 3x3 conv
// (torchvision's "v1.5", what the PyTorch peer benchmark runs), not in the 1x1 as Keras has it.
// The parameter count is the same (25,636,712 and 44,707,176 with the batch norms' moving
// statistics, Keras' totals); the FLOPs and the accuracy are torchvision's.
#include <memory>

#include "io/error.h"
#include "model/imagenet_models.h"
#include "model/layers/add.h"
#include "model/layers/batch_norm.h"
#include "model/layers/conv2d.h"
#include "model/layers/dense.h"
#include "model/layers/global_average_pool.h"
#include "model/layers/pool2d.h"
#include "model/layers/relu.h"

namespace ds::model {

namespace {

constexpr float kMomentum = 0.99f;  // Keras' default
constexpr float kEps = 1.001e-5f;   // keras.applications.resnet's

// Conv2D (with bias) + BatchNormalization, named <name>_conv and <name>_bn; returns the BN node.
int conv_bn(GraphBuilder& g, const std::string& name, int input, int out_c, int k, int stride, int pad) {
  Conv2DOptions opt;
  opt.stride = stride;
  opt.padding = Padding::kExplicit;
  opt.pad = pad;
  int x = g.add(std::make_unique<Conv2D>(name + "_conv", g.backend(), g.shape(input).c, out_c, k, k, opt), {input});
  return g.add(std::make_unique<BatchNorm>(name + "_bn", g.backend(), out_c, kMomentum, kEps), {x});
}

int relu(GraphBuilder& g, const std::string& name, int input) {
  return g.add(std::make_unique<ReLU>(name), {input});
}

// Keras' block1: 1x1 filters, 3x3 filters (stride here, v1.5), 1x1 4*filters; the shortcut is
// the input, or a strided 1x1 conv + BN to 4*filters when the shape changes.
int bottleneck(GraphBuilder& g, const std::string& name, int input, int filters, int stride, bool conv_shortcut) {
  const int shortcut = conv_shortcut ? conv_bn(g, name + "_0", input, 4 * filters, 1, stride, 0) : input;
  int x = relu(g, name + "_1_relu", conv_bn(g, name + "_1", input, filters, 1, 1, 0));
  x = relu(g, name + "_2_relu", conv_bn(g, name + "_2", x, filters, 3, stride, 1));
  x = conv_bn(g, name + "_3", x, 4 * filters, 1, 1, 0);
  x = g.add(std::make_unique<Add>(name + "_add"), {shortcut, x});
  return relu(g, name + "_out", x);
}

// Keras' stack1: `blocks` bottlenecks, the first with a projection shortcut and the stride.
int stack(GraphBuilder& g, const std::string& name, int input, int filters, int blocks, int stride) {
  int x = bottleneck(g, name + "_block1", input, filters, stride, true);
  for (int b = 2; b <= blocks; ++b) x = bottleneck(g, name + "_block" + std::to_string(b), x, filters, 1, false);
  return x;
}

}  // namespace

std::vector<Node> build_resnet(const ModelSpec& s, Backend& be, int depth) {
  if (depth != 50 && depth != 101) throw UsageError("ResNet depth must be 50 or 101, got " + std::to_string(depth));
  if (s.classes < 1) throw UsageError("model '" + s.name + "': classes must be positive");
  // Five halvings (stem conv, max pool, three strided stages): 32 pixels is the least input
  // that keeps one pixel at the end.
  if (s.in_h < 32 || s.in_w < 32)
    throw UsageError("model '" + s.name + "' needs an input of at least 32 x 32, got " + std::to_string(s.in_h) +
                     " x " + std::to_string(s.in_w));
  GraphBuilder g(be, Shape{1, s.in_channels, s.in_h, s.in_w});
  // Keras: ZeroPadding2D(3) + 7x7/2 'valid' conv; ZeroPadding2D(1) + 3x3/2 max pool. The
  // padded max pool follows a ReLU, so its zero padding equals padding that never wins.
  int x = relu(g, "conv1_relu", conv_bn(g, "conv1", 0, 64, 7, 2, 3));
  x = g.add(std::make_unique<Pool2D>("pool1_pool", PoolKind::kMax, 3, 2, Padding::kExplicit, 1), {x});
  x = stack(g, "conv2", x, 64, 3, 1);
  x = stack(g, "conv3", x, 128, 4, 2);
  x = stack(g, "conv4", x, 256, depth == 50 ? 6 : 23, 2);
  x = stack(g, "conv5", x, 512, 3, 2);
  x = g.add(std::make_unique<GlobalAveragePool>("avg_pool"), {x});
  g.add(std::make_unique<Dense>("predictions", be, g.shape(x).c, s.classes), {x});
  return g.take();
}

}  // namespace ds::model
