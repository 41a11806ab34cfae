// The network architectures, as a DAG of layers (internal to model/; net.h is the public face).
#pragma once
#include <memory>
#include <vector>

#include "model/layers/layer.h"
#include "model/net.h"

namespace ds::model {

// A layer and the nodes that feed it. Node 0 is the network input and has no layer; every other
// node's inputs are earlier nodes, so the list is already in topological order.
struct Node {
  std::unique_ptr<Layer> layer;
  std::vector<int> inputs;
  Shape shape;  // output shape for a batch of 1
  // 0, or the lane (1, 2, ...) of a run of independent layers the backend may run side by side
  // with the other lanes' (Backend::set_lane; net.cpp checks and schedules them).
  int lane = 0;
};

// Appends layers, checking shapes as it goes.
class GraphBuilder {
 public:
  GraphBuilder(Backend& be, Shape input);
  int add(std::unique_ptr<Layer> layer, std::vector<int> inputs);
  // Conv2D followed by ReLU: one Conv2D+ReLU layer, or with DOWNSCALE_FUSE_LAYERS=0 the conv and
  // a ReLU layer named "<name>_relu"; returns the last node.
  int conv_relu(const std::string& name, int input, int out_c, int k, bool same);
  // UpsampleConv2D (x factor, then a 'same' k x k conv) followed by ReLU, the same way.
  int upsample_conv_relu(const std::string& name, int input, int factor, int out_c, int k);
  const Shape& shape(int node) const { return nodes_[size_t(node)].shape; }
  // The lane of the layers added from now on (0: the main one).
  void set_lane(int lane) { lane_ = lane; }
  Backend& backend() { return be_; }
  std::vector<Node> take() { return std::move(nodes_); }

 private:
  Backend& be_;
  std::vector<Node> nodes_;
  int lane_ = 0;
};

// Throws ds::UsageError for an unknown name or a spec the architecture cannot take.
std::vector<Node> build_model(const ModelSpec& spec, Backend& be);
// The names build_model knows: a checkpoint naming another is refused as such.
bool is_known_model(const std::string& name);
std::string known_models();  // "demo, mnn, deepesd, resnet50, resnet101 or inception_v3"

}  // namespace ds::model
