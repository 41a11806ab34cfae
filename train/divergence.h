// What made training diverge. Checked only once the loss is not finite, so a normal step pays
// for the one loss check alone; then every layer's weights and gradients are read back.
#pragma once
#include <string>
#include <vector>

#include "model/net.h"

namespace ds {

// "weight conv2/W: 12 of 864 values non-finite" for the first parameter (in the net's order)
// whose value or gradient holds NaN or Inf; "" when all are finite.
std::string first_nonfinite_parameter(const std::vector<model::Param>& params);

}  // namespace ds
