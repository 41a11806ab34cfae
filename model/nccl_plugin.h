// NCCL through the CUDA plugin (model/cuda/nccl_communicator.cu), for train/device_communicator.h:
// the program links no CUDA or NCCL library, so these go through the plugin's table.
#pragma once
#include <memory>
#include <string>

#include "model/backend.h"

namespace ds {
class Communicator;
}

namespace ds::model {

// Empty when NCCL can be used (the plugin loads, is recent enough, and libnccl.so.2 loads),
// else the reason, for logs and errors.
std::string nccl_unavailable_reason();
// See CudaPluginApi::create_nccl_communicator. Throws ds::Error with the reason when NCCL cannot be used.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& be);

}  // namespace ds::model
