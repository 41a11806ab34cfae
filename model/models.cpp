// The architectures. Both end in the Bernoulli-Gamma head: one 4x4 'valid' conv with 3 output
// channels (p, log alpha, log beta) and a sigmoid on channel 0.
#include "model/models.h"

#include "io/error.h"
#include "model/layers/concat.h"
#include "model/layers/conv2d.h"
#include "model/layers/relu.h"
#include "model/layers/sigmoid_channel.h"
#include "model/layers/upsample_conv2d.h"
#include "model/layers/upsample_nearest.h"

namespace ds::model {

GraphBuilder::GraphBuilder(Backend& be, Shape input) : be_(be) {
  Node in;
  in.shape = input;
  nodes_.push_back(std::move(in));
}

int GraphBuilder::add(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  std::vector<Shape> in;
  for (int i : inputs) {
    if (i < 0 || i >= int(nodes_.size())) throw Error("layer " + layer->name() + ": bad input node");
    in.push_back(nodes_[size_t(i)].shape);
  }
  Node n;
  n.shape = layer->output_shape(in);
  n.layer = std::move(layer);
  n.inputs = std::move(inputs);
  nodes_.push_back(std::move(n));
  return int(nodes_.size()) - 1;
}

int GraphBuilder::conv_relu(const std::string& name, int input, int out_c, int k, bool same) {
  const int in_c = shape(input).c;
  int c = add(std::make_unique<Conv2D>(name, be_, in_c, out_c, k, k, same ? Padding::kSame : Padding::kValid),
              {input});
  return add(std::make_unique<ReLU>(name + "_relu"), {c});
}

namespace {

// p, log(alpha), log(beta): one 'valid' 4x4 conv (three fused 1-channel Keras heads; Glorot's
// fan_out counts one channel so the init matches the separate heads) and a sigmoid on p.
// The 'valid' 4x4 trims 3 rows and columns, which is how 4H becomes 4H-3.
int bernoulli_gamma_head(GraphBuilder& g, int input) {
  int h = g.add(std::make_unique<Conv2D>("head", g.backend(), g.shape(input).c, 3, 4, 4, Padding::kValid, 1),
                {input});
  return g.add(std::make_unique<SigmoidChannel>("head_p_sigmoid", 0), {h});
}

// A small network of the same shape family for the demo and tests: two convs at the input
// resolution, then x2 upsample + conv, twice, then the head.
std::vector<Node> build_demo(const ModelSpec& s, Backend& be) {
  if (s.filters.size() != 3)
    throw UsageError("model 'demo' needs 3 filter counts (model.filters), got " + std::to_string(s.filters.size()));
  for (int f : s.filters)
    if (f < 1) throw UsageError("model 'demo': filter counts must be positive");
  GraphBuilder g(be, Shape{1, s.in_channels, s.in_h, s.in_w});
  int x = g.conv_relu("conv1", 0, s.filters[0], 3, true);
  x = g.conv_relu("conv2", x, s.filters[0], 3, true);
  x = g.add(std::make_unique<UpsampleNearest>("up1", 2), {x});
  x = g.conv_relu("up1_conv1", x, s.filters[1], 3, true);
  x = g.add(std::make_unique<UpsampleNearest>("up2", 2), {x});
  x = g.conv_relu("up2_conv1", x, s.filters[2], 3, true);
  bernoulli_gamma_head(g, x);
  return g.take();
}

// The reference multi-scale network: five parallel branches with kernel sizes 2..9 see the
// coarse input at different receptive fields; their concatenation is upsampled twice with
// convs in between; then the head. 1,615,671 parameters for 20 input channels.
std::vector<Node> build_mnn(const ModelSpec& s, Backend& be) {
  GraphBuilder g(be, Shape{1, s.in_channels, s.in_h, s.in_w});
  std::vector<int> branches;
  for (int k : {2, 3, 5, 7, 9}) {
    const std::string b = "branch" + std::to_string(k);
    int x = g.conv_relu(b + "_conv1", 0, 50, k, true);
    x = g.conv_relu(b + "_conv2", x, 25, k, true);
    x = g.conv_relu(b + "_conv3", x, 10, k, true);
    branches.push_back(x);
  }
  int x = g.add(std::make_unique<Concat>("concat"), branches);
  // Each x2 upsampling is one layer with the conv after it (UpsampleConv2D: less work, same math).
  x = g.add(std::make_unique<UpsampleConv2D>("up1_conv1", be, 2, 50, 50, 5), {x});
  x = g.add(std::make_unique<ReLU>("up1_conv1_relu"), {x});
  x = g.conv_relu("up1_conv2", x, 75, 5, true);
  x = g.conv_relu("up1_conv3", x, 100, 5, true);
  x = g.add(std::make_unique<UpsampleConv2D>("up2_conv1", be, 2, 100, 132, 8), {x});
  x = g.add(std::make_unique<ReLU>("up2_conv1_relu"), {x});
  bernoulli_gamma_head(g, x);
  return g.take();
}

}  // namespace

std::vector<Node> build_model(const ModelSpec& spec, Backend& be) {
  if (spec.in_channels < 1 || spec.in_h < 1 || spec.in_w < 1)
    throw UsageError("model '" + spec.name + "': input shape (" + std::to_string(spec.in_channels) + ", " +
                     std::to_string(spec.in_h) + ", " + std::to_string(spec.in_w) + ") must be positive");
  if (spec.name == "demo") return build_demo(spec, be);
  if (spec.name == "mnn") return build_mnn(spec, be);
  throw UsageError("unknown model '" + spec.name + "' (expected demo or mnn)");
}

}  // namespace ds::model
