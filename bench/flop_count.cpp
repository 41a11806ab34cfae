#include "bench/flop_count.h"

#include "model/layers/conv2d.h"
#include "model/layers/upsample_conv2d.h"
#include "model/models.h"

namespace ds::bench {

FlopCount count_flops(const model::ModelSpec& spec) {
  // A throwaway backend: build_model allocates the weights, and the shapes need a real graph.
  auto be = model::make_cpu_backend(1);
  const std::vector<model::Node> nodes = model::build_model(spec, *be);
  FlopCount f;
  for (const model::Node& node : nodes) {
    const auto* conv = dynamic_cast<const model::Conv2D*>(node.layer.get());
    if (!conv) continue;
    // An UpsampleConv2D counts as the architecture's conv on the upsampled input, whatever the
    // backend saves by running it on the small one: the FLOP count is the model's, not ours.
    const model::Shape& in = nodes[size_t(node.inputs[0])].shape;
    const auto* up = dynamic_cast<const model::UpsampleConv2D*>(conv);
    const model::ConvDesc d = conv->desc(up ? up->upsampled(in) : in);
    const model::Shape o = d.out();
    const int64_t macs = int64_t(o.c) * o.h * o.w * d.in.c * d.kh * d.kw;
    f.forward += 2 * macs;
    f.backward_weights += 2 * macs;
    // Net::backward asks no gradient of the network input (node 0), so those convs skip it.
    if (node.inputs[0] != 0) f.backward_data += 2 * macs;
  }
  return f;
}

}  // namespace ds::bench
