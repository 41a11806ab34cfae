// Host entry points of special_functions.h. The implementation is the shared inline one, so the
// unit tests of digamma() also cover what the CUDA loss kernel computes.
#include "model/special_functions.h"

namespace ds::model {

double digamma(double x) { return digamma_inline(x); }

}  // namespace ds::model
