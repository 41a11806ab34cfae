// The architectures. demo and mnn end in a convolutional head: one 4x4 'valid' conv with the
// loss's channels (loss.h; Bernoulli-Gamma: p, log alpha, log beta, with a sigmoid on p).
// deepesd ends in dense heads over the land points, scattered onto the output grid.
#include "model/models.h"

#include <cstdlib>
#include <iterator>
#include <string>

#include "io/error.h"
#include "model/env_switch.h"
#include "model/imagenet_models.h"
#include "model/layers/concat.h"
#include "model/layers/conv2d.h"
#include "model/layers/dense.h"
#include "model/layers/flatten.h"
#include "model/layers/relu.h"
#include "model/layers/scatter_to_grid.h"
#include "model/layers/sigmoid_channel.h"
#include "model/layers/upsample_conv2d.h"
#include "model/layers/upsample_nearest.h"
#include "model/loss.h"

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
  n.lane = lane_;
  nodes_.push_back(std::move(n));
  return int(nodes_.size()) - 1;
}

namespace {
// Conv and ReLU as one layer (fused on the GPU) unless DOWNSCALE_FUSE_LAYERS=0 asks for the two
// separate layers (the same numbers; for comparing).
bool fuse_layers() {
  return on_off_switch("DOWNSCALE_FUSE_LAYERS", true,
                       "0 (each convolution's ReLU a layer of its own) or 1 or unset (fused, the default)");
}
}  // namespace

int GraphBuilder::conv_relu(const std::string& name, int input, int out_c, int k, bool same) {
  const int in_c = shape(input).c;
  const bool one_layer = fuse_layers();
  int c = add(std::make_unique<Conv2D>(name, be_, in_c, out_c, k, k, same ? Padding::kSame : Padding::kValid, 0,
                                       one_layer),
              {input});
  return one_layer ? c : add(std::make_unique<ReLU>(name + "_relu"), {c});
}

int GraphBuilder::upsample_conv_relu(const std::string& name, int input, int factor, int out_c, int k) {
  const bool one_layer = fuse_layers();
  int c = add(std::make_unique<UpsampleConv2D>(name, be_, factor, shape(input).c, out_c, k, one_layer), {input});
  return one_layer ? c : add(std::make_unique<ReLU>(name + "_relu"), {c});
}

namespace {

// The loss's channels (p, log(alpha), log(beta) for Bernoulli-Gamma): one 'valid' 4x4 conv
// (fused 1-channel Keras heads; Glorot's fan_out counts one channel so the init matches the
// separate heads) and, for Bernoulli-Gamma, a sigmoid on p. The 'valid' 4x4 trims 3 rows and
// columns, which is how 4H becomes 4H-3.
int conv_head(GraphBuilder& g, int input, LossKind loss) {
  int h = g.add(std::make_unique<Conv2D>("head", g.backend(), g.shape(input).c, loss_channels(loss), 4, 4,
                                         Padding::kValid, 1),
                {input});
  if (loss != LossKind::kBernoulliGamma) return h;
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
  conv_head(g, x, parse_loss(s.loss, "model spec"));
  return g.take();
}

// The reference multi-scale network: five parallel branches with kernel sizes 2..9 see the
// coarse input at different receptive fields; their concatenation is upsampled twice with
// convs in between; then the head. 1,615,671 parameters for 20 input channels.
std::vector<Node> build_mnn(const ModelSpec& s, Backend& be) {
  GraphBuilder g(be, Shape{1, s.in_channels, s.in_h, s.in_w});
  std::vector<int> branches;
  // The five branches are independent until the concat: one lane each, so a backend with lanes
  // (the CUDA one, unless DOWNSCALE_CUDA_LANES=0) runs their small convolutions side by side.
  for (int k : {2, 3, 5, 7, 9}) {
    const std::string b = "branch" + std::to_string(k);
    g.set_lane(int(branches.size()) + 1);
    int x = g.conv_relu(b + "_conv1", 0, 50, k, true);
    x = g.conv_relu(b + "_conv2", x, 25, k, true);
    x = g.conv_relu(b + "_conv3", x, 10, k, true);
    branches.push_back(x);
  }
  g.set_lane(0);
  int x = g.add(std::make_unique<Concat>("concat"), branches);
  // Each x2 upsampling is one layer with the conv after it (UpsampleConv2D: less work, same math)
  // and, as every conv here, its ReLU.
  x = g.upsample_conv_relu("up1_conv1", x, 2, 50, 5);
  x = g.conv_relu("up1_conv2", x, 75, 5, true);
  x = g.conv_relu("up1_conv3", x, 100, 5, true);
  x = g.upsample_conv_relu("up2_conv1", x, 2, 132, 8);
  conv_head(g, x, parse_loss(s.loss, "model spec"));
  return g.take();
}

// DeepESD (Baño-Medina et al. 2022): three 3x3 'same' convs of 50, 25 and 10 filters with ReLU at
// the predictors' resolution, flatten, and one dense head per output channel (Bernoulli-Gamma:
// p, log alpha, log beta) with one unit per land point. The heads are fused into one Dense of
// K*L units (Glorot fan_out L, as separate layers), scattered onto the output grid, then the
// sigmoid on p. Parameters: convs + K (10 H W L + L): the dense heads dominate.
std::vector<Node> build_deepesd(const ModelSpec& s, Backend& be) {
  if (s.out_h < 1 || s.out_w < 1)
    throw UsageError("model 'deepesd' needs the output grid (out_h, out_w), got " + std::to_string(s.out_h) + " x " +
                     std::to_string(s.out_w));
  if (s.land_mask.size() != size_t(s.out_h) * size_t(s.out_w))
    throw UsageError("model 'deepesd': land mask has " + std::to_string(s.land_mask.size()) + " points, the " +
                     std::to_string(s.out_h) + " x " + std::to_string(s.out_w) + " output grid needs " +
                     std::to_string(int64_t(s.out_h) * s.out_w));
  int64_t land = 0;
  for (uint8_t m : s.land_mask) land += m != 0;
  if (land == 0) throw UsageError("model 'deepesd': the land mask has no land point");
  const LossKind loss = parse_loss(s.loss, "model spec");
  const int k = loss_channels(loss);
  GraphBuilder g(be, Shape{1, s.in_channels, s.in_h, s.in_w});
  int x = g.conv_relu("conv1", 0, 50, 3, true);
  x = g.conv_relu("conv2", x, 25, 3, true);
  x = g.conv_relu("conv3", x, 10, 3, true);
  x = g.add(std::make_unique<Flatten>("flatten"), {x});
  x = g.add(std::make_unique<Dense>("heads", be, g.shape(x).c, int(k * land), int(land)), {x});
  // Ocean points are filled with 0: a valid value for every head (p = sigmoid(0) = 0.5, log
  // alpha = log beta = 0), never read by the masked losses, NaN-masked by predict.
  x = g.add(std::make_unique<ScatterToGrid>("to_grid", be, k, s.out_h, s.out_w, s.land_mask, 0.0f), {x});
  if (loss == LossKind::kBernoulliGamma) g.add(std::make_unique<SigmoidChannel>("head_p_sigmoid", 0), {x});
  return g.take();
}

// Every model this version builds, by name: build_model dispatches on it, and checkpoints and
// configurations are checked against it.
struct ModelEntry {
  const char* name;
  std::vector<Node> (*build)(const ModelSpec&, Backend&);
  bool image_classifier;  // the synthetic benchmark's nets (softmax over classes), not downscaling ones
};
const ModelEntry kModels[] = {
    {"demo", build_demo, false},
    {"mnn", build_mnn, false},
    {"deepesd", build_deepesd, false},
    {"resnet50", [](const ModelSpec& s, Backend& be) { return build_resnet(s, be, 50); }, true},
    {"resnet101", [](const ModelSpec& s, Backend& be) { return build_resnet(s, be, 101); }, true},
    {"inception_v3", build_inception_v3, true},
};

const ModelEntry* find_model(const std::string& name) {
  for (const ModelEntry& m : kModels)
    if (name == m.name) return &m;
  return nullptr;
}

}  // namespace

bool is_image_classifier(const std::string& name) {
  const ModelEntry* m = find_model(name);
  return m && m->image_classifier;
}

std::vector<Node> build_model(const ModelSpec& spec, Backend& be) {
  if (spec.in_channels < 1 || spec.in_h < 1 || spec.in_w < 1)
    throw UsageError("model '" + spec.name + "': input shape (" + std::to_string(spec.in_channels) + ", " +
                     std::to_string(spec.in_h) + ", " + std::to_string(spec.in_w) + ") must be positive");
  const ModelEntry* m = find_model(spec.name);
  if (!m) throw UsageError("unknown model '" + spec.name + "' (expected " + known_models() + ")");
  return m->build(spec, be);
}

bool is_known_model(const std::string& name) { return find_model(name) != nullptr; }

std::string known_models() {
  std::string list;
  const size_t n = std::size(kModels);
  for (size_t i = 0; i < n; ++i) list += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(kModels[i].name);
  return list;
}

}  // namespace ds::model
