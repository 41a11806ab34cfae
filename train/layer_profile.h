// Where a training step's time goes, layer by layer: the input of the scaling model
// (train/scaling_model.h). Measured on one rank with no communication: forward, loss, each
// layer's backward (the backend synchronized after every layer, so a GPU's queued work is
// charged to the layer that queued it), the optimizer; medians over several steps after warm-up.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/loss.h"
#include "model/net.h"

namespace ds {

struct LayerTime {
  std::string name;
  double backward_s = 0;
  double forward_s = 0;  // 0 in profiles written before forward was timed per layer
  // The gradients this layer's backward completes, in the order GradientBuckets meets them
  // (the reverse of Net::params()): floats of each.
  std::vector<std::string> params;
  std::vector<int64_t> param_floats;
  int64_t floats() const;
};

struct LayerProfile {
  std::string device;     // the backend's name (e.g. "cuda:0 NVIDIA H100 ...", "cpu oneDNN ...")
  std::string model;      // the ModelSpec's name and input, e.g. "mnn 20x30x53"
  std::string precision;  // tf32 | fp32 | bf16 | fp16 as requested
  int batch = 0;          // samples per step on the rank
  int steps = 0;          // timed steps (medians)
  double forward_s = 0, loss_s = 0;
  double backward_s = 0;  // the whole backward, not synchronized per layer (what a step pays)
  double optimizer_s = 0;
  std::vector<LayerTime> layers;  // in backward order (the last layer first)
  int64_t parameter_floats() const;
  double layers_backward_s() const;  // sum over layers (synchronized per layer: >= backward_s)
  double compute_s() const { return forward_s + loss_s + backward_s + optimizer_s; }
  std::string to_json() const;
  static LayerProfile from_json(const std::string& text, const std::string& what);  // InputError naming `what`
  static LayerProfile load(const std::string& path);
};

// Runs `warmup` then `steps` training steps (forward, masked loss, backward, Adam) on x/y/mask
// and returns the medians. `precision` is only recorded (the caller has set the backend's math).
LayerProfile measure_layer_profile(model::Net& net, model::Backend& be, model::LossKind loss, const model::Tensor& x,
                                   const model::Tensor& y, const model::Tensor& mask, int warmup, int steps,
                                   const std::string& precision);

// The same for any loss and optimizer (the image nets' softmax cross-entropy and SGD in
// `downscale benchmark --profile-layers`): loss(out, d_out) writes the output's gradient into
// d_out (already shaped as out), optimizer_step() updates the weights from their gradients.
using LossStep = std::function<void(const model::Tensor& out, model::Tensor& d_out)>;
LayerProfile measure_layer_profile(model::Net& net, model::Backend& be, const model::Tensor& x, const LossStep& loss,
                                   const std::function<void()>& optimizer_step, int warmup, int steps,
                                   const std::string& precision);

}  // namespace ds
