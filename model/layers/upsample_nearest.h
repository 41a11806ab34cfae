// Keras UpSampling2D(size=factor, interpolation='nearest'): each pixel becomes a factor x factor
// block. Backward sums each block's gradient back into its pixel.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class UpsampleNearest : public Layer {
 public:
  UpsampleNearest(std::string name, int factor);
  std::string type() const override { return "UpSampling2D"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;

 private:
  int factor_;
};

}  // namespace ds::model
