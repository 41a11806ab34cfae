// The CUDA entry points of backend.h for builds without the CUDA toolkit, so callers need no
// #ifdefs: they ask cuda_available() and get a clear error if they insist.
#include "io/error.h"
#include "model/backend.h"

namespace ds::model {

bool cuda_available() { return false; }
int cuda_device_count() { return 0; }

std::unique_ptr<Backend> make_cuda_backend(int /*device*/) { throw Error("this build has no CUDA backend"); }

}  // namespace ds::model
