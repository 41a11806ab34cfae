#include "model/layers/add.h"

#include "io/error.h"

namespace ds::model {

Shape Add::output_shape(const std::vector<Shape>& in) const {
  if (in.size() < 2)
    throw Error("layer " + name() + " (Add) needs at least two inputs, got " + std::to_string(in.size()));
  for (const Shape& s : in)
    if (s != in[0]) throw Error("layer " + name() + " (Add): cannot add " + in[0].str() + " and " + s.str());
  return in[0];
}

void Add::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  for (const Tensor* t : in) common_block(*t, out);
  be.copy(out.data(), in[0]->data(), out.size());
  for (size_t i = 1; i < in.size(); ++i) be.accumulate(out.size(), in[i]->data(), out.data());
}

void Add::backward(Backend& be, const std::vector<const Tensor*>& /*in*/, const Tensor& /*out*/, const Tensor& dout,
                   const std::vector<Tensor*>& din) {
  // d(sum)/d(input i) is the identity. A copy per input: the Net owns every gradient buffer.
  for (Tensor* d : din)
    if (d) be.copy(d->data(), dout.data(), dout.size());
}

}  // namespace ds::model
