// The CUDA plugin's entry point (see model/cuda_plugin_abi.h): tells whether GPUs can be used and
// why not, and creates the backend, checking with a first tiny kernel that this build has code
// for the GPU. Kept apart from the backend so the boundary stays one function.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "io/error.h"
#include "model/cuda/cuda_backend.h"
#include "model/cuda_plugin_abi.h"
#include "train/distributed.h"

#ifndef DS_CUDA_ARCHITECTURES
#define DS_CUDA_ARCHITECTURES "?"
#endif

namespace ds::model {
namespace {

std::string version(int v) {  // CUDA's 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string cuda_error(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

CudaProbe probe() {
  CudaProbe r;
  // No driver library at all is a CPU node (or a container started without its GPUs): under auto
  // that means the CPU. The CUDA runtime would report it as "driver insufficient", the same code
  // as a real driver too old for this build, which is an error; so look for the driver first.
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    const char* e = dlerror();
    r.reason = std::string("no NVIDIA driver (") + (e ? e : "libcuda.so.1 not found") + ")";
    return r;
  }
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  cudaGetLastError();  // clear it so later CUDA calls are not blamed for it
  if (e == cudaSuccess && n > 0) {
    r.devices = n;
    return r;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string vis = visible ? std::string(" (CUDA_VISIBLE_DEVICES='") + visible + "')" : "";
  if (e == cudaSuccess || e == cudaErrorNoDevice) {
    r.reason = "no GPU visible" + vis;
    return r;
  }
  if (e == cudaErrorStubLibrary) {  // the toolkit's stub libcuda, not a driver
    r.reason = "no NVIDIA driver (only the CUDA toolkit's stub libcuda.so.1: " + cuda_error(e) + ")";
    return r;
  }
  // A driver is installed but CUDA cannot use it: too old for this build's runtime, a
  // driver/kernel-module mismatch, devices busy or in a bad state. Say which.
  r.unusable = true;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  r.reason = cuda_error(e) + " (NVIDIA driver supports CUDA " + version(driver) + ", this build needs CUDA " +
             version(runtime) + ")" + vis;
  return r;
}

__global__ void first_kernel(int* flag) {
  if (flag) *flag = 1;
}

std::unique_ptr<Backend> create_backend(int device) {
  auto backend = std::make_unique<CudaBackend>(device);
  // cudaErrorNoKernelImageForDevice (a GPU older than the architectures built, or newer without
  // PTX) would otherwise surface at the first op, deep inside a layer: check here, by name.
  first_kernel<<<1, 1>>>(nullptr);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device);
    throw Error("GPU " + std::to_string(device) + " (" + prop.name + ", compute capability " +
                std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                ") cannot run this build's kernels (CUDA architectures " DS_CUDA_ARCHITECTURES "): " + cuda_error(e));
  }
  return backend;
}

std::string build_description() {
  return "CUDA " + version(CUDART_VERSION) + ", cuDNN " + std::to_string(CUDNN_MAJOR) + "." +
         std::to_string(CUDNN_MINOR) + ", architectures " DS_CUDA_ARCHITECTURES;
}

}  // namespace

// model/cuda/nccl_communicator.cu
std::string nccl_unavailable();
std::unique_ptr<Communicator> create_nccl_communicator(Communicator& host, Backend& be);

}  // namespace ds::model

extern "C" __attribute__((visibility("default"))) const ds::model::CudaPluginApi* ds_cuda_plugin(int abi) {
  static const std::string build = ds::model::build_description();
  static const ds::model::CudaPluginApi api = [] {
    ds::model::CudaPluginApi a;
    a.build = build.c_str();
    a.probe = &ds::model::probe;
    a.create_backend = &ds::model::create_backend;
    a.nccl_unavailable = &ds::model::nccl_unavailable;
    a.create_nccl_communicator = &ds::model::create_nccl_communicator;
    return a;
  }();
  return abi == DS_CUDA_PLUGIN_ABI ? &api : nullptr;
}
