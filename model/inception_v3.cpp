// InceptionV3 (Szegedy et al. 2016) as keras.applications.InceptionV3: every conv is conv2d_bn,
// a conv without bias + batch norm without scale (eps 1e-3, Keras' default; gamma is fixed at 1
// because a ReLU follows) + ReLU. Stem, three 35x35 blocks (mixed0-2), a grid reduction (mixed3),
// four 17x17 blocks with factorized 1x7/7x1 convs (mixed4-7), a reduction (mixed8), two 8x8
// blocks with 1x3/3x1 branches (mixed9-10), global average pooling and a dense layer. Sizes
// above are for the 299 x 299 input; the least input is 75 x 75, as in Keras.
// 23,851,784 parameters with the moving statistics (Keras' total, include_top=True).
//
// Keras' InceptionV3 has no auxiliary classifier; with ModelSpec.aux_head this adds
// torchvision's (InceptionAux after mixed7: 5x5/3 average pool, 1x1 conv to 128, 5x5 conv to 768,
// global average pooling, dense), built from conv2d_bn as the rest. Its logits are computed in
// forward but no loss reads them: Net::backward skips it and zeroes its gradients, so a training
// step costs its forward only (+3,327,592 parameters).
#include <memory>

#include "io/error.h"
#include "model/imagenet_models.h"
#include "model/layers/batch_norm.h"
#include "model/layers/concat.h"
#include "model/layers/conv2d.h"
#include "model/layers/dense.h"
#include "model/layers/global_average_pool.h"
#include "model/layers/pool2d.h"
#include "model/layers/relu.h"

namespace ds::model {

namespace {

// Keras' conv2d_bn: <name>_conv, <name>_bn, <name>_relu; 'same' unless valid.
int conv_bn(GraphBuilder& g, const std::string& name, int input, int filters, int kh, int kw, int stride = 1,
            bool valid = false) {
  Conv2DOptions opt;
  opt.stride = stride;
  opt.padding = valid ? Padding::kValid : Padding::kSame;
  opt.bias = false;
  int x = g.add(std::make_unique<Conv2D>(name + "_conv", g.backend(), g.shape(input).c, filters, kh, kw, opt), {input});
  x = g.add(std::make_unique<BatchNorm>(name + "_bn", g.backend(), filters, 0.99f, 1e-3f, /*scale=*/false), {x});
  return g.add(std::make_unique<ReLU>(name + "_relu"), {x});
}

int max_pool(GraphBuilder& g, const std::string& name, int input) {
  return g.add(std::make_unique<Pool2D>(name, PoolKind::kMax, 3, 2), {input});
}

// 3x3 average pool, stride 1, 'same' (the padding is not counted), then a 1x1 conv2d_bn.
int avg_pool_conv(GraphBuilder& g, const std::string& name, int input, int filters) {
  int x = g.add(std::make_unique<Pool2D>(name + "_avg", PoolKind::kAverage, 3, 1, Padding::kSame), {input});
  return conv_bn(g, name, x, filters, 1, 1);
}

int concat(GraphBuilder& g, const std::string& name, std::vector<int> inputs) {
  return g.add(std::make_unique<Concat>(name), std::move(inputs));
}

// mixed0-2 (35 x 35): 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1.
int block35(GraphBuilder& g, const std::string& name, int x, int pool_filters) {
  const int b1 = conv_bn(g, name + "_1x1", x, 64, 1, 1);
  int b5 = conv_bn(g, name + "_5x5_1", x, 48, 1, 1);
  b5 = conv_bn(g, name + "_5x5_2", b5, 64, 5, 5);
  int b3 = conv_bn(g, name + "_dbl_1", x, 64, 1, 1);
  b3 = conv_bn(g, name + "_dbl_2", b3, 96, 3, 3);
  b3 = conv_bn(g, name + "_dbl_3", b3, 96, 3, 3);
  const int bp = avg_pool_conv(g, name + "_pool", x, pool_filters);
  return concat(g, name, {b1, b5, b3, bp});
}

// mixed4-7 (17 x 17): 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | avgpool-1x1; c: the inner width.
int block17(GraphBuilder& g, const std::string& name, int x, int c) {
  const int b1 = conv_bn(g, name + "_1x1", x, 192, 1, 1);
  int b7 = conv_bn(g, name + "_7x7_1", x, c, 1, 1);
  b7 = conv_bn(g, name + "_7x7_2", b7, c, 1, 7);
  b7 = conv_bn(g, name + "_7x7_3", b7, 192, 7, 1);
  int bd = conv_bn(g, name + "_dbl_1", x, c, 1, 1);
  bd = conv_bn(g, name + "_dbl_2", bd, c, 7, 1);
  bd = conv_bn(g, name + "_dbl_3", bd, c, 1, 7);
  bd = conv_bn(g, name + "_dbl_4", bd, c, 7, 1);
  bd = conv_bn(g, name + "_dbl_5", bd, 192, 1, 7);
  const int bp = avg_pool_conv(g, name + "_pool", x, 192);
  return concat(g, name, {b1, b7, bd, bp});
}

// mixed9-10 (8 x 8): 1x1 | 1x1-(1x3 | 3x1) | 1x1-3x3-(1x3 | 3x1) | avgpool-1x1.
int block8(GraphBuilder& g, const std::string& name, int x) {
  const int b1 = conv_bn(g, name + "_1x1", x, 320, 1, 1);
  const int b3 = conv_bn(g, name + "_3x3_1", x, 384, 1, 1);
  const int b3a = conv_bn(g, name + "_3x3_2a", b3, 384, 1, 3);
  const int b3b = conv_bn(g, name + "_3x3_2b", b3, 384, 3, 1);
  const int b3c = concat(g, name + "_3x3", {b3a, b3b});
  int bd = conv_bn(g, name + "_dbl_1", x, 448, 1, 1);
  bd = conv_bn(g, name + "_dbl_2", bd, 384, 3, 3);
  const int bda = conv_bn(g, name + "_dbl_3a", bd, 384, 1, 3);
  const int bdb = conv_bn(g, name + "_dbl_3b", bd, 384, 3, 1);
  const int bdc = concat(g, name + "_dbl", {bda, bdb});
  const int bp = avg_pool_conv(g, name + "_pool", x, 192);
  return concat(g, name, {b1, b3c, bdc, bp});
}

}  // namespace

std::vector<Node> build_inception_v3(const ModelSpec& s, Backend& be) {
  if (s.classes < 1) throw UsageError("model '" + s.name + "': classes must be positive");
  if (s.in_h < 75 || s.in_w < 75)
    throw UsageError("model '" + s.name + "' needs an input of at least 75 x 75 (Keras' minimum), got " +
                     std::to_string(s.in_h) + " x " + std::to_string(s.in_w));
  GraphBuilder g(be, Shape{1, s.in_channels, s.in_h, s.in_w});
  int x = conv_bn(g, "stem1", 0, 32, 3, 3, 2, true);
  x = conv_bn(g, "stem2", x, 32, 3, 3, 1, true);
  x = conv_bn(g, "stem3", x, 64, 3, 3);
  x = max_pool(g, "stem_pool1", x);
  x = conv_bn(g, "stem4", x, 80, 1, 1, 1, true);
  x = conv_bn(g, "stem5", x, 192, 3, 3, 1, true);
  x = max_pool(g, "stem_pool2", x);

  x = block35(g, "mixed0", x, 32);
  x = block35(g, "mixed1", x, 64);
  x = block35(g, "mixed2", x, 64);

  {  // mixed3: 35 -> 17. 3x3/2 | 1x1-3x3-3x3/2 | maxpool/2.
    const int b3 = conv_bn(g, "mixed3_3x3", x, 384, 3, 3, 2, true);
    int bd = conv_bn(g, "mixed3_dbl_1", x, 64, 1, 1);
    bd = conv_bn(g, "mixed3_dbl_2", bd, 96, 3, 3);
    bd = conv_bn(g, "mixed3_dbl_3", bd, 96, 3, 3, 2, true);
    x = concat(g, "mixed3", {b3, bd, max_pool(g, "mixed3_pool", x)});
  }
  x = block17(g, "mixed4", x, 128);
  x = block17(g, "mixed5", x, 160);
  x = block17(g, "mixed6", x, 160);
  x = block17(g, "mixed7", x, 192);

  if (s.aux_head) {
    // torchvision's InceptionAux needs mixed7 at 17 x 17 or more, i.e. the 299 x 299 input.
    if (g.shape(x).h < 17 || g.shape(x).w < 17)
      throw UsageError("model '" + s.name + "': the auxiliary head needs an input of at least 299 x 299, got " +
                       std::to_string(s.in_h) + " x " + std::to_string(s.in_w));
    int a = g.add(std::make_unique<Pool2D>("aux_pool", PoolKind::kAverage, 5, 3), {x});
    a = conv_bn(g, "aux_1", a, 128, 1, 1);
    a = conv_bn(g, "aux_2", a, 768, 5, 5, 1, true);
    a = g.add(std::make_unique<GlobalAveragePool>("aux_avg_pool"), {a});
    g.add(std::make_unique<Dense>("aux_predictions", be, 768, s.classes), {a});
  }

  {  // mixed8: 17 -> 8. 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | maxpool/2.
    int b3 = conv_bn(g, "mixed8_3x3_1", x, 192, 1, 1);
    b3 = conv_bn(g, "mixed8_3x3_2", b3, 320, 3, 3, 2, true);
    int b7 = conv_bn(g, "mixed8_7x7_1", x, 192, 1, 1);
    b7 = conv_bn(g, "mixed8_7x7_2", b7, 192, 1, 7);
    b7 = conv_bn(g, "mixed8_7x7_3", b7, 192, 7, 1);
    b7 = conv_bn(g, "mixed8_7x7_4", b7, 192, 3, 3, 2, true);
    x = concat(g, "mixed8", {b3, b7, max_pool(g, "mixed8_pool", x)});
  }
  x = block8(g, "mixed9", x);
  x = block8(g, "mixed10", x);
  x = g.add(std::make_unique<GlobalAveragePool>("avg_pool"), {x});
  g.add(std::make_unique<Dense>("predictions", be, g.shape(x).c, s.classes), {x});
  return g.take();
}

}  // namespace ds::model
