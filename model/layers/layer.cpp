#include "model/layers/layer.h"

#include "io/error.h"

namespace ds::model {

void expect_inputs(const Layer& layer, size_t got, size_t n) {
  if (got != n)
    throw Error("layer " + layer.name() + " (" + layer.type() + ") takes " + std::to_string(n) + " input(s), got " +
                std::to_string(got));
}

}  // namespace ds::model
