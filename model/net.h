// The network the trainer and predictor use: built from a ModelSpec, run on one Backend.
// (Public interface of model/. Implementation: layers in model/layers/, one file a layer.)
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/model_spec.h"
#include "model/tensor.h"

namespace ds::model {

// How layers that behave differently in training run (batch norm, dropout). Training is the
// default, as in PyTorch; evaluation and prediction switch to inference.
struct ForwardMode {
  bool training = true;
  uint64_t seed = 0;  // dropout masks are a function of (seed, layer, element): set it per step
};

// A trainable parameter: its value and gradient live on the backend.
struct Param {
  std::string name;  // "<layer>/W" or "<layer>/b": stable, used as the checkpoint key
  Tensor* value;
  Tensor* grad;
};

class Net {
 public:
  Net(const ModelSpec& spec, Backend& backend);
  ~Net();
  // Keras defaults: Glorot-uniform kernels, zero biases, from a seeded generator.
  void init(uint64_t seed);
  // x: (N, C, H, W) on the backend. Returns the loss's channels (loss.h) on the output grid:
  // (N, 3, 4H-3, 4W-3) for demo/mnn with Bernoulli-Gamma (channel 0 p after the sigmoid, 1
  // log(alpha), 2 log(beta)); (N, K, out_h, out_w) for deepesd. Owned by the net.
  // layer_done, if set, is called after each layer's forward with the layer's name (a profiler's
  // per-layer forward times; train/layer_profile.h).
  const Tensor& forward(const Tensor& x, const std::function<void(const std::string& layer)>& layer_done = {});
  // d_out: gradient of the loss with respect to forward's output. Overwrites every param grad.
  // Reads the activations of the last forward, and its input x: keep x alive and unchanged.
  // layer_done, if set, is called after each layer's backward with that layer's params (maybe
  // none), whose gradients are then final: the trainer starts their allreduce while backward
  // goes on (train/gradient_buckets.h).
  void backward(const Tensor& d_out, const std::function<void(const std::vector<Param>&)>& layer_done = {});
  // Inside a layer_done hook: the name of the layer whose backward just ended (a profiler's
  // label for layers without parameters too; train/layer_profile.h).
  const std::string& backward_layer() const;
  std::vector<Param> params();
  // Non-trainable learned state (batch norm running statistics), grad null; saved in checkpoints.
  std::vector<Param> buffers();
  void set_mode(const ForwardMode& mode);
  Shape output_shape(int n) const;
  int64_t parameter_count() const;
  // Bytes of the activations and gradient buffers a training step at batch n holds, after the
  // memory reuse (or without it, when switched off): what the benchmark prints as its footprint.
  // Parameters, optimizer state and layers' own workspaces are not included.
  int64_t activation_bytes(int n) const;
  // On by default: gradients (and, in inference, activations) share buffers by liveness. Off
  // gives one buffer a node, as before; the results are the same bit for bit.
  void set_memory_reuse(bool on);
  // On by default: layers marked as independent lanes (MNN's branches) run side by side where the
  // backend can (Backend::lanes()); off runs every layer in list order. Results are the same.
  void set_lanes(bool on);
  // On by default: where the backend computes convolutions in a 16-bit type it reads and writes
  // (Backend::activation_dtype: BF16 on the CPU under train.precision bf16), the activations
  // between such layers are stored in it (net.cpp): half their memory. The step is the same bit
  // for bit either way on the CPU. Off keeps every activation FP32 (also the default with
  // DOWNSCALE_ACTIVATIONS16=0 in the environment).
  void set_activations16(bool on);
  // On by default: where the backend runs its convolutions, batch norms and poolings in a
  // channel-blocked layout (Backend::activation_block: nChw16c with oneDNN on AVX-512), the
  // activations and gradients between such layers are stored so (net.cpp), and no op converts
  // them from and to NCHW. The host still sees NCHW (Tensor::upload, download). Results agree
  // with plain NCHW to rounding (oneDNN's NCHW batch norm sums in another order). Off (also with
  // DOWNSCALE_BLOCKED_ACTIVATIONS=0 in the environment) keeps every activation NCHW; it applies
  // from the next forward.
  void set_blocked_activations(bool on);
  // The channel block of layer `layer`'s output in the last forward (before one: the plan).
  int activation_block(const std::string& layer) const;
  // One line for the logs on a backend with a blocked layout: how many activations are blocked
  // ("activations of 172 of 174 layers kept in nChw16c ..."), or that none is and why; empty on
  // a backend without one.
  std::string blocked_summary() const;
  // The type layer `layer`'s output had in the last forward (before one: the plan for the
  // backend's current math).
  DType activation_dtype(const std::string& layer) const;
  // One line for the logs when some activations are 16-bit under the backend's current math
  // ("activations of 17 of 19 layers stored in bf16 ..."), else empty.
  std::string activations16_summary() const;
  // The layers in forward order, and the output `layer` wrote in the last forward, which stays
  // until the next one after a training forward with memory reuse off (train/device_check.h
  // compares them layer by layer against another backend's; with reuse, an in-place ReLU's
  // input holds its output, and an inference forward shares buffers).
  std::vector<std::string> layer_names() const;
  const Tensor& layer_output(const std::string& layer) const;
  std::string summary() const;  // layers, output shapes and parameter counts, Keras-style
  const ModelSpec& spec() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds::model
