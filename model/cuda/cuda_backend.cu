// CudaBackend: device selection and memory (the plugin's entry point is cuda_plugin.cu).
#include "model/cuda/cuda_backend.h"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>

#include "model/cuda/cuda_check.h"
#include "model/env_switch.h"

namespace ds::model {

namespace {
// The caching allocator's underlying allocator: nullptr when out of memory, so the cache can be
// emptied and the request retried.
void* raw_cuda_malloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // not sticky, but clear it so the next check does not report it
    return nullptr;
  }
  return p;
}

// A switch between a path and cuDNN that is otherwise chosen per plan by timing: env `name` 0
// (never, 0), 1 (always, 1), or unset or empty (by timing, -1); anything else is an error naming it.
int timed_switch(const char* name) {
  const std::string v = env_choice(name, {"0", "1"}, "0 (never), 1 (always) or unset (by timing)");
  return v.empty() ? -1 : v == "1" ? 1 : 0;
}

// A switch whose default is BF16's (set_math): env `name` 0 (never, 0), 1 (always, 1) or timed
// (by timing per plan, -1); unset or empty, nullopt (timed under bf16, never otherwise); anything
// else is an error naming it.
std::optional<int> bf16_timed_switch(const char* name) {
  const std::string v =
      env_choice(name, {"0", "1", "timed"}, "0 (never), 1 (always), timed or unset (timed under bf16, else never)");
  if (v.empty()) return std::nullopt;
  return v == "1" ? 1 : v == "timed" ? -1 : 0;
}
}  // namespace

CudaBackend::CudaBackend(int device)
    : device_(device), cache_(raw_cuda_malloc, [](void* p) { cudaFree(p); }) {
  {
    const std::string l = env_choice("DOWNSCALE_CUDA_LAYOUT", {"nhwc", "nchw"}, "nhwc or nchw");
    layout_env_ = l.empty() ? -1 : l == "nhwc" ? 1 : 0;
  }
  narrow_mode_ = timed_switch("DOWNSCALE_CUDA_NARROW");
  narrow_window_ = on_off_switch("DOWNSCALE_CUDA_NARROW_WINDOW", narrow_window_,
                                 "0 (per-pixel kernels), 1 or unset (window)");
  // "timed" times the GEMM also where it reads 16-bit activations or NHWC operands; unset does
  // so under bf16 only (set_math), where it ran on an H200 (2026-11-30), and leaves FP16's on cuDNN.
  {
    const std::string v = env_choice("DOWNSCALE_CUDA_WGRAD_GEMM", {"0", "1", "timed"},
                                     "0 (never), 1 (always), timed (by timing, also in NHWC and from 16-bit "
                                     "activations) or unset (by timing; those two forms under bf16 only)");
    if (v == "timed") {
      wgrad_16bit_env_ = true;  // wgrad_gemm_mode_ stays -1: by timing
    } else if (!v.empty()) {
      wgrad_gemm_mode_ = v == "1" ? 1 : 0;
      wgrad_16bit_env_ = false;  // 0 or 1: nothing timed
    }
  }
  fuse_mode_ = timed_switch("DOWNSCALE_CUDA_FUSE");
  graph_env_ = bf16_timed_switch("DOWNSCALE_CUDA_GRAPH");
  tf32_passes_env_ = bf16_timed_switch("DOWNSCALE_CUDA_TF32_PASSES");
  phase_f2_ = on_off_switch("DOWNSCALE_CUDA_PHASE_F2", phase_f2_,
                             "0 (the polyphase interleave with f read at run time) or 1 (the default: x2 "
                             "upsamplings compiled for f = 2)");
  {
    const std::string v = env_choice("DOWNSCALE_CUDA_PAD_CHANNELS", {"0", "1", "all", "timed"},
                                     "1 (16-bit NHWC input channels rounded up to 8 where the output's are a "
                                     "multiple of 8), all (wherever they are not), timed (where cudnnFind times "
                                     "that faster), 0 (as the layer has them) or unset (timed under bf16, else 0)");
    if (!v.empty()) pad_env_ = v == "1" ? 1 : v == "all" ? 2 : v == "timed" ? -1 : 0;
  }
  // Deferred weight passes (cuda_lanes.cu): on or off, nothing to time; unset, on under bf16.
  {
    const std::string v = env_choice("DOWNSCALE_CUDA_DEFER_WEIGHTS", {"0", "1"},
                                     "1 (weight gradients on a stream of their own), 0 (in order) or unset (1 under "
                                     "bf16, else 0)");
    if (!v.empty()) defer_env_ = v == "1";
  }
  graph_reduced_precision_ =
      env_choice("DOWNSCALE_CUDA_GRAPH_NOTES", {"fp32", "pytorch"},
                 "fp32 or unset (engines that sum in FP32 from the operands as given) or pytorch (also those that "
                 "reduce in 16 bits, as PyTorch allows for 16-bit tensors)") == "pytorch";
  if (const char* mb = std::getenv("DOWNSCALE_CUDA_WGRAD_GEMM_MB")) {
    char* end = nullptr;
    const long long v = std::strtoll(mb, &end, 10);
    if (!*mb || *end || v < 1 || v > (1LL << 20))
      throw UsageError(std::string("DOWNSCALE_CUDA_WGRAD_GEMM_MB is '") + mb + "', expected MiB from 1 to 1048576");
    wgrad_budget_bytes_ = int64_t(v) << 20;
  }
  cudnn_bias_grad_ = env_choice("DOWNSCALE_CUDA_BIAS_GRAD", {"cudnn", "kernel"}, "cudnn or kernel (the default)") ==
                     "cudnn";
  fuse16_ = on_off_switch("DOWNSCALE_CUDA_FUSE16", fuse16_, "0 (separate 16-bit casts) or 1 (the default)");
  {
    const std::string v = env_choice("DOWNSCALE_CUDA_ACTIVATIONS16", {"0", "1"},
                                     "1 (16-bit activations), 0 (FP32) or unset (16 bits under bf16 only)");
    act16_env_ = v.empty() ? -1 : v == "1" ? 1 : 0;
  }
  transforms_ = on_off_switch("DOWNSCALE_CUDA_TRANSFORMS", transforms_,
                               "0 (no FFT or Winograd algorithm) or 1 (the default)");
  pass_times_ = on_off_switch("DOWNSCALE_CUDA_PASS_TIMES", pass_times_,
                              "1 (a table of each convolution pass's GPU time at the end, one stream) or 0 or unset");
  bn_kernels_ = env_choice("DOWNSCALE_CUDA_BN", {"kernels", "cudnn"},
                           "kernels (batch norm by the backend's own kernels) or cudnn or unset (cuDNN's)") == "kernels";
  // Five lanes by default, one per MNN branch: on an H200 (2026-11-28, gpu_check variants) the
  // TF32 step ran 1639 samples/s with them against 1562 on one stream, BF16 1595 against 1554.
  const char* l = std::getenv("DOWNSCALE_CUDA_LANES");
  if (l && *l) {
    const std::string v = l;
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || n < 0 || n > 16)
      throw UsageError("DOWNSCALE_CUDA_LANES is '" + v + "', expected 0 (one stream) to 16 streams (5, the default)");
    n_lanes_ = int(n);
  }
  if (n_lanes_ > 0 && pass_times_) {
    // Said only when asked for lanes explicitly: the default gives way silently.
    if (l && *l) std::fprintf(stderr, "cuda: DOWNSCALE_CUDA_LANES off: DOWNSCALE_CUDA_PASS_TIMES times one stream\n");
    n_lanes_ = 0;
  }
  resolve_timed_paths();  // math_'s (tf32) until set_math
  // The weights lane is one of the lanes: without them the switch asked for does nothing, said.
  if (defer_env_.value_or(false) && n_lanes_ == 0)
    std::fprintf(stderr,
                 "cuda: DOWNSCALE_CUDA_DEFER_WEIGHTS=1 does nothing with the lanes off (%s): weight gradients run "
                 "in order\n",
                 pass_times_ ? "DOWNSCALE_CUDA_PASS_TIMES=1 times one stream" : "DOWNSCALE_CUDA_LANES=0");
  test_refuse_ = on_off_switch("DOWNSCALE_CUDA_TEST_REFUSE", false,
                               "1 (tests: each pass's first algorithm refused once) or 0 or unset");
  {
    const std::string v = env_choice("DOWNSCALE_CUDA_TEST_PADDING", {"padded", "plain"},
                                     "padded or plain (tests: DOWNSCALE_CUDA_PAD_CHANNELS=timed's choice forced) or "
                                     "unset (by the timings)");
    test_padding_ = v == "padded" ? 1 : v == "plain" ? 2 : 0;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky error so later CUDA calls are not blamed for it
    throw Error("no CUDA device available");
  }
  if (device < 0 || device >= count)
    throw Error("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " found)");
  DS_CUDA(cudaSetDevice(device));
  DS_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, compute_priority()));
  DS_CUDNN(cudnnCreate(&cudnn_));
  DS_CUDNN(cudnnSetStream(cudnn_, stream_));
  DS_CUDA(cudaMalloc(&d_sum_, sizeof(double)));
  DS_CUDA(cudaMalloc(&d_flag_, sizeof(int)));
}

CudaBackend::~CudaBackend() {
  // No throwing from a destructor: errors here mean the context is already gone.
  if (pass_times_) report_pass_times();
  for (cudaEvent_t e : pass_events_) cudaEventDestroy(e);
  // Every queued kernel done before the plans go: a graph engine's execution plan is destroyed
  // with its ConvPlan (cudaDeviceSynchronize: the lanes' streams too).
  cudaDeviceSynchronize();
  cudaGetLastError();  // a failure here (the context gone) is not left for another backend's next check
  plans_.clear();
  bn_plans_.clear();
  destroy_lanes();  // back on the main stream, every lane synchronized and gone
  if (cublas_) cublasDestroy(cublas_);  // the main lane's (the lanes' went with them)
  if (stream_) cudaStreamSynchronize(stream_);  // nothing queued may still use a block freed below
  cache_.free_all();  // tensors, workspace and padding scratch
  if (d_sum_) cudaFree(d_sum_);
  if (d_flag_) cudaFree(d_flag_);
  if (relu_) cudnnDestroyActivationDescriptor(relu_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (stream_) cudaStreamDestroy(stream_);
}

std::string CudaBackend::name() const {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device_);
  return "cuda (device " + std::to_string(device_) + ": " + prop.name + ", cuDNN " +
         std::to_string(cudnnGetVersion()) + ")";
}

float* CudaBackend::allocate(int64_t n) {
  return static_cast<float*>(cache_.allocate(size_t(n > 0 ? n : 1) * sizeof(float)));
}

void CudaBackend::release(float* p) {
  // Back to the cache, no synchronization: work queued later on the stream that reuses the block
  // runs after the work queued before this release (between fork_lanes and join_lanes the cache
  // holds it until the join: cuda_lanes.cu).
  cache_.release(p);
}

void CudaBackend::copy_from_host(float* dst, const float* host, int64_t n) {
  DS_CUDA(cudaMemcpyAsync(dst, host, size_t(n) * sizeof(float), cudaMemcpyHostToDevice, stream_));
  DS_CUDA(cudaStreamSynchronize(stream_));  // the caller may free or reuse `host` on return
}

void CudaBackend::copy_to_host(float* host, const float* src, int64_t n) {
  DS_CUDA(cudaMemcpyAsync(host, src, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  DS_CUDA(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy(float* dst, const float* src, int64_t n) {
  if (dst != src) DS_CUDA(cudaMemcpyAsync(dst, src, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::synchronize() {
  DS_CUDA(cudaStreamSynchronize(stream_));
  for (const Lane& l : lanes_)
    if (l.stream && l.stream != stream_) DS_CUDA(cudaStreamSynchronize(l.stream));
}

void* CudaBackend::workspace(size_t bytes) {
  if (bytes > ws_bytes_) {
    if (ws_) cache_.release(ws_);
    ws_ = nullptr;
    ws_bytes_ = 0;
    ws_ = cache_.allocate(bytes);
    ws_bytes_ = bytes;
  }
  return ws_;
}

float* CudaBackend::pad_buffer(int64_t n) {
  if (n > pad_n_) {
    if (pad_) release(pad_);
    pad_ = nullptr;
    pad_n_ = 0;
    pad_ = allocate(n);
    pad_n_ = n;
  }
  return pad_;
}

}  // namespace ds::model
