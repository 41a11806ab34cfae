// One node of the network (Caffe's Layer): given its input tensors it computes one output tensor,
// and given the output's gradient it computes its inputs' and its parameters' gradients. Shapes
// are explicit and checked; layers never allocate their outputs (the Net owns every activation).
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/net.h"
#include "model/tensor.h"

namespace ds::model {

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  const std::string& name() const { return name_; }
  virtual std::string type() const = 0;

  // The output shape for these input shapes; throws ds::Error if they do not fit the layer.
  virtual Shape output_shape(const std::vector<Shape>& in) const = 0;
  // out is already shaped as output_shape(in) says.
  virtual void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) = 0;
  // Overwrites din[i] (already shaped like in[i]) and every parameter gradient. din[i] may be
  // null when nobody needs that gradient (the network input), saving e.g. a conv backward-data.
  virtual void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                        const std::vector<Tensor*>& din) = 0;

  // 16-bit activations (Backend::activation_dtype; the Net decides which, net.cpp): whether
  // forward and backward take a 16-bit input / write a 16-bit output when the Net hands them one.
  // same_16bit: then every input and the output have one type (Concat moves values, never
  // converts). Gradients stay FP32 either way. `be`: the backend the Net plans for (a convolution
  // asks it: Backend::conv_activations16).
  virtual bool reads_16bit(const Backend& /*be*/) const { return false; }
  virtual bool writes_16bit(const Backend& /*be*/) const { return false; }
  virtual bool same_16bit() const { return false; }

  // Blocked activations (Backend::activation_block; the Net decides which, net.cpp): whether
  // forward and backward take an input / write an output (and the gradients beside them) in the
  // backend's channel-blocked layout when the Net hands them one. same_block: then every input
  // and the output have one layout (an elementwise op, a batch norm, a pooling, a concat).
  virtual bool reads_blocked() const { return false; }
  virtual bool writes_blocked() const { return false; }
  virtual bool same_block() const { return false; }


  virtual std::vector<Param> params() { return {}; }
  virtual int64_t parameter_count() const { return 0; }
  virtual void init(std::mt19937_64& /*rng*/) {}
  // State that is learned but not by gradients (batch norm's running statistics): saved in
  // checkpoints beside the params; grad is null.
  virtual std::vector<Param> buffers() { return {}; }
  // Training or inference (batch norm's statistics, dropout) and the seed of this step's dropout.
  virtual void set_mode(const ForwardMode& /*mode*/) {}

 protected:
  // The block a and b share (Tensor::block); throws ds::Error naming the layer when they differ,
  // which the Net's plan never lets happen for a same_block() layer.
  int common_block(const Tensor& a, const Tensor& b) const;

 private:
  std::string name_;
};

// Throws ds::Error unless the layer got exactly `n` inputs.
void expect_inputs(const Layer& layer, size_t got, size_t n);

}  // namespace ds::model
