#include "model/layers/concat.h"

#include "io/error.h"

namespace ds::model {

Shape Concat::output_shape(const std::vector<Shape>& in) const {
  if (in.empty()) throw Error("layer " + name() + " (Concatenate) needs at least one input");
  Shape out = in[0];
  out.c = 0;
  for (const Shape& s : in) {
    if (s.n != in[0].n || s.h != in[0].h || s.w != in[0].w)
      throw Error("layer " + name() + ": cannot concatenate " + in[0].str() + " and " + s.str());
    out.c += s.c;
  }
  return out;
}

void Concat::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  int offset = 0;
  for (const Tensor* t : in) {
    common_block(*t, out);
    if (out.is_16bit()) {
      if (t->dtype() != out.dtype())
        throw Error("layer " + name() + ": cannot concatenate " + dtype_name(t->dtype()) + " into " +
                    dtype_name(out.dtype()));
      be.copy_channels16(t->shape(), reinterpret_cast<const uint16_t*>(t->storage()), out.shape(), offset,
                         reinterpret_cast<uint16_t*>(out.storage()));
    } else {
      be.copy_channels(t->shape(), t->data(), out.shape(), offset, out.data());
    }
    offset += t->shape().c;
  }
}

void Concat::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/, const Tensor& dout,
                      const std::vector<Tensor*>& din) {
  int offset = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (din[i]) be.slice_channels(in[i]->shape(), offset, dout.shape(), dout.data(), din[i]->data());
    offset += in[i]->shape().c;
  }
}

}  // namespace ds::model
