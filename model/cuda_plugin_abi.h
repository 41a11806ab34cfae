// The one boundary between the program and the CUDA plugin (libdownscale_cuda.so), so the
// `downscale` executable links no CUDA library and runs on every node: the loader
// (model/backend_factory.cpp) dlopens the plugin and calls its single C entry point, which
// returns a table of functions. Both sides are built by the same compiler from this tree, so
// the table may carry C++ types (std::string, std::unique_ptr<Backend>) and ds::Error thrown in
// the plugin is caught as ds::Error in the program (libstdc++ matches type_info by name).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "model/backend.h"

namespace ds {
class Communicator;  // train/distributed.h
}

// Bump when a member changes meaning or type. Appending members does not need a bump: the table
// says its own size, and the loader uses a member only when the size covers it. The Backend
// class (model/backend.h) crosses the boundary too: bump when its virtual functions change, or
// an older plugin would be called through the wrong vtable slots (tests/model/plugin_abi_test.cpp
// pins the virtuals to this number). 2: softmax_cross_entropy and all_finite over several buffers
// (2026-11-22). 3: upsample_conv2d_relu_forward, upsample_conv2d_backward_scratch and
// upsample_conv2d_backward, inserted before copy_channels (2026-11-23). 4: conv2d_backward, after
// conv2d_relu_forward (2026-11-23). 5: lanes, fork_lanes, set_lane, join_lanes at the end (2026-11-23).
// 6: activation_dtype after set_math, copy_channels16 and relu_backward16 after slice_channels,
// and Tensor's dtype (16-bit activations, 2026-11-23). 7: conv_activations16 and
// activations16_nhwc after activation_dtype (16-bit activations in NHWC, 2026-11-28). 8:
// activation_block after activations16_nhwc, the batch norms' block, the blocked global average
// pooling after them, and ConvDesc/PoolDesc/Tensor's blocks (blocked activations, 2026-11-29).
// 9: defer_weight_passes at the end (deferred weight gradients, 2026-11-30). 10: adam_update_many
// after it (2026-11-30). 11: softmax_cross_entropy_accumulate after adam_update_many (the
// benchmark's loss without a per-step wait, 2026-12-01).
#define DS_CUDA_PLUGIN_ABI 11
#define DS_CUDA_PLUGIN_ENTRY "ds_cuda_plugin"

namespace ds::model {

struct CudaPluginApi {
  int abi = DS_CUDA_PLUGIN_ABI;
  size_t size = sizeof(CudaPluginApi);
  const char* build = "";  // "CUDA 13.0, cuDNN 9.x, architectures ...": for logs and errors
  // GPUs usable by this process (CUDA_VISIBLE_DEVICES applies); never throws.
  CudaProbe (*probe)() = nullptr;
  // The backend on GPU `device`; throws ds::Error naming the cause (no such device, no kernel
  // image for this GPU, out of memory...).
  std::unique_ptr<Backend> (*create_backend)(int device) = nullptr;
  // Appended (issue 14). Empty when NCCL can be used (libnccl.so.2 is loaded with dlopen on
  // first use, so a node without NCCL keeps the GPU backend), else why not. Never throws.
  std::string (*nccl_unavailable)() = nullptr;
  // A communicator over NCCL among `host`'s ranks on the GPU of `be` (a backend from
  // create_backend, so each rank's device is already chosen): rank 0's NCCL unique id is
  // broadcast through `host`, which also carries the host-memory collectives. Collective over
  // the ranks; throws ds::Error naming the rank and the cause.
  std::unique_ptr<ds::Communicator> (*create_nccl_communicator)(ds::Communicator& host, Backend& be) = nullptr;
};

}  // namespace ds::model

// Returns the plugin's table, or nullptr if it was built for another `abi`.
extern "C" const ds::model::CudaPluginApi* ds_cuda_plugin(int abi);
using DsCudaPluginEntry = const ds::model::CudaPluginApi* (*)(int abi);
