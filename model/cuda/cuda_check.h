// Turns CUDA, cuDNN and cuBLAS status codes into ds::Error with the failing call and place, so a
// GPU failure reads like any other error of the program instead of a silent wrong result.
#pragma once
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "io/error.h"

namespace ds::model {

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + " (" + file + ":" + std::to_string(line) +
                "): " + cudaGetErrorString(e));
}

inline void cudnn_check(cudnnStatus_t s, const char* what, const char* file, int line) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw Error(std::string("cuDNN error in ") + what + " (" + file + ":" + std::to_string(line) +
                "): " + cudnnGetErrorString(s));
}

inline void cublas_check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error in ") + what + " (" + file + ":" + std::to_string(line) +
                "): status " + std::to_string(int(s)));
}

}  // namespace ds::model

#define DS_CUDA(call) ::ds::model::cuda_check((call), #call, __FILE__, __LINE__)
#define DS_CUDNN(call) ::ds::model::cudnn_check((call), #call, __FILE__, __LINE__)
#define DS_CUBLAS(call) ::ds::model::cublas_check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors surface here, execution errors at the
// next synchronizing call.
#define DS_CUDA_LAUNCHED() DS_CUDA(cudaGetLastError())
