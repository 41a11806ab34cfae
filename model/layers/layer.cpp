#include "model/layers/layer.h"

#include "io/error.h"

namespace ds::model {

void expect_inputs(const Layer& layer, size_t got, size_t n) {
  if (got != n)
    throw Error("layer " + layer.name() + " (" + layer.type() + ") takes " + std::to_string(n) + " input(s), got " +
                std::to_string(got));
}

int Layer::common_block(const Tensor& a, const Tensor& b) const {
  if (a.block() != b.block())
    throw Error("internal: layer " + name() + " (" + type() + ") got tensors " + a.shape().str() + " and " +
                b.shape().str() + " in different channel blocks (" + std::to_string(a.block()) + ", " +
                std::to_string(b.block()) + ")");
  return a.block();
}

}  // namespace ds::model
