// Convolutions through cuDNN's legacy API (descriptor + algorithm + workspace).
//
// cuDNN pads symmetrically only, but Keras 'same' with an even kernel pads one more row/column at
// the bottom/right. Those convolutions are computed on an explicitly zero-padded copy of the input
// (pad_nchw into a scratch buffer) with cuDNN padding 0, and backward-data crops its result back
// (crop_nchw). Symmetric cases (odd 'same', 'valid') use cuDNN's own padding, no copy.
//
// Math mode follows train.precision: TF32 (CUDNN_DEFAULT_MATH, which on Ampere and later lets FP32
// convolutions use TF32 tensor cores, as PyTorch sets it with allow_tf32; ~1e-3 relative
// differences from the CPU) or FP32 (CUDNN_FMA_MATH: plain FP32 FMA kernels, never tensor cores,
// so results match the CPU backend to float rounding; what the parity tests pin).
//
// BF16/FP16 (train.precision bf16|fp16): each pass rounds its FP32 operands into 16-bit scratch
// blocks from the caching allocator (cast kernels around model/kernels/half_cast.h), laid out as
// NCHW, or transposed to NHWC with DOWNSCALE_CUDA_LAYOUT=nhwc; runs cuDNN on BF16/FP16 descriptors with FP32 compute
// type and CUDNN_TENSOR_OP_MATH, and widens the 16-bit result back into the FP32 NCHW output. The
// bias add and the bias gradient stay FP32 (on y32). Backward-filter's weight gradient comes out
// in 16 bits before widening, as under PyTorch's autocast; FP16 relies on loss scaling for range.
// With the NCHW layout the casts are fused into their neighbours (fused16(); DOWNSCALE_CUDA_FUSE16=0
// turns it off): the forward's widening, bias add and ReLU are one kernel; conv2d_backward rounds
// the masked output gradient once for both backward passes; the polyphase path (cuda_upsample_conv.cu)
// interleaves straight from the 16-bit small output and de-interleaves straight into 16 bits. On
// an H100 (2026-11-23) BF16 spent 22.6 % of its convolution time outside the cuDNN calls.
//
// Narrow convolutions (stride 1, out_c <= 4: MNN's head) may run any of their three passes on the
// hand-written FP32 kernels of cuda_narrow_conv.cu instead: choose_narrow times both per pass
// once per plan, or DOWNSCALE_CUDA_NARROW=0|1 forces the choice. Other plans on FP32 operands
// may compute the weight gradient by im2col + cuBLAS (cuda_wgrad_gemm.cu), chosen the same way.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <tuple>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"

namespace ds::model {

namespace {

// Largest workspace an algorithm may ask for; beyond it the next-best algorithm is taken.
constexpr size_t kMaxWorkspace = size_t(2) << 30;

// The workspace cudnnFind* may give the candidates it times (from the caching allocator, returned
// to it right after): algorithms needing more are not timed, so not chosen. It was a fixed 512 MiB
// until an H100 run (2026-11-23) showed all three passes of MNN's largest convolution (the
// 100 -> 528 channel polyphase 5x5, 11.5 ms of a 27.8 ms TF32 step) on algorithms using 492-500
// MiB, right under it. Now the largest of kMaxWorkspace (2 GiB), 1 GiB and kMinFindWorkspace that
// is at most a quarter of the free device memory (PyTorch's cudnn.benchmark offers what it can
// allocate). Three sizes only: the block goes back to the caching allocator after each Find, and
// the next plan's Find asks the same size again and reuses it, where a size following the free
// memory would leave a new idle block in the cache each time.
constexpr size_t kMinFindWorkspace = size_t(512) << 20;
size_t find_workspace_bytes() {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return kMinFindWorkspace;
  }
  for (size_t bytes = kMaxWorkspace; bytes > kMinFindWorkspace; bytes /= 2)
    if (bytes <= free_bytes / 4) return bytes;
  return kMinFindWorkspace;
}

// A ranked list's usable entries, in its order (cuDNN's heuristic, or cudnnFind*'s fastest
// first): succeeded, within max_workspace, and never CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (each
// pass runs under its entry's math type, and on FP32 operands that one may round them to FP16,
// beyond TF32: see docs/gpu.md, math mode). fma_first (FP32 mode) puts FMA-math entries before
// the others (the descriptor asks for FMA math anyway; this keeps a list that ranks a tensor-core
// variant first from choosing an algorithm for it); fma_only drops the others (Find in FP32 mode).
template <typename Perf>
std::vector<ConvChoice> usable_choices(const Perf* perf, int n, bool fma_first, bool fma_only, size_t max_workspace,
                                       bool timed) {
  std::vector<ConvChoice> first, rest;  // FP32 mode: FMA math, then the others; else one list
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_workspace ||
        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    const bool later = (fma_first || fma_only) && perf[i].mathType != CUDNN_FMA_MATH;
    (later ? rest : first).push_back(ConvChoice{int(perf[i].algo), int(perf[i].mathType), perf[i].memory, timed});
  }
  if (!fma_only) first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

// conv_choices.h names cuDNN's statuses by number: the categories it relies on.
static_assert(CUDNN_STATUS_BAD_PARAM == 2000 && CUDNN_STATUS_NOT_SUPPORTED == 3000 &&
                  CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER == 3005 &&
                  CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART == 3006 && CUDNN_STATUS_INTERNAL_ERROR == 4000 &&
                  CUDNN_STATUS_EXECUTION_FAILED == 5000,
              "cuDNN's status numbering changed: update model/cuda/conv_choices.h");

const char* const kPassNames[3] = {"forward", "backward data", "backward filter"};

// A pass's workspace: what its ranked entry said, or more if cuDNN asks more for the algorithm
// under the math type the descriptor now has (cudnnFind* measured each algorithm per math type;
// an algorithm run with less workspace than its math type needs fails, as PyTorch issue 9486 and
// OneFlow PR 3460 describe). A failing query changes nothing: the call itself then reports.
size_t workspace_needed(size_t ranked, cudnnStatus_t query, size_t asked) {
  return query == CUDNN_STATUS_SUCCESS && asked > ranked ? asked : ranked;
}

__global__ void cast_to_half16_kernel(int64_t n, kernels::Half16 k, int c, int h, int w, bool nhwc, const float* x,
                                      uint16_t* xh) {
  DS_GRID_STRIDE(i, n) kernels::cast_to_half16_at(i, k, c, h, w, nhwc, x, xh);
}

__global__ void cast_from_half16_kernel(int64_t n, kernels::Half16 k, int c, int h, int w, bool nhwc,
                                        const uint16_t* xh, float* x) {
  DS_GRID_STRIDE(i, n) kernels::cast_from_half16_at(i, k, c, h, w, nhwc, xh, x);
}

// A block per (sample, channel) plane (grid-stride over planes), its threads over the plane: the
// channel comes from one division per plane, not two 64-bit ones per element.
__global__ void cast_from_half16_bias_relu_kernel(int64_t planes, int c, int64_t hw, kernels::Half16 k,
                                                  const uint16_t* yh, const float* b, bool relu, float* y) {
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const int ch = int(plane % c);
    for (int64_t j = threadIdx.x; j < hw; j += blockDim.x)
      kernels::cast_from_half16_bias_relu_at(plane * hw + j, ch, k, yh, b, relu, y);
  }
}

// The FP32 epilogue (kernels::bias_relu_at), planes as above.
__global__ void bias_relu_kernel(int64_t planes, int c, int64_t hw, const float* b, bool relu, float* y) {
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const int ch = int(plane % c);
    for (int64_t j = threadIdx.x; j < hw; j += blockDim.x) kernels::bias_relu_at(plane * hw + j, ch, b, relu, y);
  }
}

__global__ void relu_grad_to_half16_kernel(int64_t n, kernels::Half16 k, const float* y, const float* dy, float* g,
                                           uint16_t* gh) {
  DS_GRID_STRIDE(i, n) kernels::relu_grad_to_half16_at(i, k, y, dy, g, gh);
}

}  // namespace

kernels::Half16 CudaBackend::half16_kind() const {
  return math_ == MathMode::kBf16 ? kernels::Half16::kBf16 : kernels::Half16::kFp16;
}

void* CudaBackend::half16_scratch(const Shape& s) { return cache_.allocate(size_t(s.size()) * sizeof(uint16_t)); }

void* CudaBackend::to_half16(const Shape& s, const float* x) {
  void* xh = half16_scratch(s);
  const int64_t n = s.size();
  const auto k = math_ == MathMode::kBf16 ? kernels::Half16::kBf16 : kernels::Half16::kFp16;
  cast_to_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, k, s.c, s.h, s.w, nhwc_, x,
                                                                 static_cast<uint16_t*>(xh));
  DS_CUDA_LAUNCHED();
  return xh;
}

void CudaBackend::from_half16(const Shape& s, const void* xh, float* x) {
  const int64_t n = s.size();
  const auto k = math_ == MathMode::kBf16 ? kernels::Half16::kBf16 : kernels::Half16::kFp16;
  cast_from_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, k, s.c, s.h, s.w, nhwc_,
                                                                   static_cast<const uint16_t*>(xh), x);
  DS_CUDA_LAUNCHED();
}

void* CudaBackend::half16_pass(const Shape& as, const float* a, const void* a16, const Shape& bs, const float* b,
                               const void* b16, const Shape& out_shape, float* out,
                               const std::function<void(const void*, const void*, void*)>& run, bool keep_out) {
  // Only what is cast here goes back to the cache here; a16/b16 are the caller's.
  void* h[3] = {a16 ? nullptr : to_half16(as, a), b16 ? nullptr : to_half16(bs, b), half16_scratch(out_shape)};
  try {
    run(a16 ? a16 : h[0], b16 ? b16 : h[1], h[2]);
  } catch (...) {
    for (void* x : h)
      if (x) cache_.release(x);
    throw;
  }
  for (int i = 0; i < 2; ++i)
    if (h[i]) cache_.release(h[i]);  // reused only by work queued after this
  if (keep_out) return h[2];
  from_half16(out_shape, h[2], out);
  cache_.release(h[2]);
  return nullptr;
}

// What a failing convolution was, appended to its error: cuDNN may lack a 16-bit kernel for one
// layout or shape, and the one line must say which (mode, layout, geometry).
// With the plan's choices when it exists (algorithm, math type and workspace per pass, and whether
// cudnnFind* or the heuristic chose them), so a failure on a GPU says what ran without a rerun.
std::string CudaBackend::conv_context(const ConvDesc& d) const {
  static const char* const modes[] = {"tf32", "fp32", "bf16", "fp16"};
  std::string plan;
  const auto it = plans_.find(conv_key(d));
  if (it != plans_.end()) {
    const ConvPlan& p = *it->second;
    const char* const names[3] = {"fwd", "data", "filter"};  // indexed by ConvPass
    for (int k = 0; k < 3; ++k)
      plan += std::string(k ? ", " : "; ") + names[k] + " algo " + std::to_string(p.use[k].algo) + " math " +
              std::to_string(p.use[k].math) + " ws " + std::to_string(p.use[k].workspace);
    plan += std::string(p.timed ? " (cudnnFind)" : " (heuristic)") + (p.explicit_pad ? ", explicit padding" : "") +
            (p.gemm_bwd_weights ? ", weight gradient by im2col + cuBLAS" : "");
  }
  return std::string(" [convolution ") + d.in.str() + " -> " + std::to_string(d.out_c) + " channels, " +
         std::to_string(d.kh) + "x" + std::to_string(d.kw) + ", train.precision " + modes[int(math_)] +
         (half16() ? std::string(", DOWNSCALE_CUDA_LAYOUT ") + (nhwc_ ? "nhwc" : "nchw") : std::string()) + plan + "]";
}

CudaBackend::ConvKey CudaBackend::conv_key(const ConvDesc& d) const {
  return ConvKey{d.in.n,    d.in.c,       d.in.h,     d.in.w,      d.out_c,    d.kh,
                 d.kw,      d.stride,     d.pad_top,  d.pad_bottom, d.pad_left, d.pad_right,
                 int(math_), half16() && nhwc_ ? 1 : 0};
}

CudaBackend::ConvPlan& CudaBackend::conv_plan(const ConvDesc& d) {
  const ConvKey key = conv_key(d);
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;

  const Shape out = d.out();
  auto p = std::make_unique<ConvPlan>();
  p->explicit_pad = d.pad_top != d.pad_bottom || d.pad_left != d.pad_right;
  p->x_shape = d.in;
  int pad_h = d.pad_top, pad_w = d.pad_left;
  if (p->explicit_pad) {
    p->x_shape.h += d.pad_top + d.pad_bottom;
    p->x_shape.w += d.pad_left + d.pad_right;
    pad_h = pad_w = 0;
  }
  DS_CUDNN(cudnnCreateTensorDescriptor(&p->x));
  DS_CUDNN(cudnnCreateTensorDescriptor(&p->y));
  DS_CUDNN(cudnnCreateTensorDescriptor(&p->y32));
  DS_CUDNN(cudnnCreateTensorDescriptor(&p->b));
  DS_CUDNN(cudnnCreateFilterDescriptor(&p->w));
  for (cudnnConvolutionDescriptor_t& c : p->conv) DS_CUDNN(cudnnCreateConvolutionDescriptor(&c));
  // The convolution operands: FP32 NCHW, or in the 16-bit modes BF16/FP16 in the chosen layout.
  const bool h16 = half16();
  const cudnnDataType_t dt = !h16 ? CUDNN_DATA_FLOAT : math_ == MathMode::kBf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const cudnnTensorFormat_t fmt = h16 && nhwc_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->x, fmt, dt, p->x_shape.n, p->x_shape.c, p->x_shape.h, p->x_shape.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->y, fmt, dt, out.n, out.c, out.h, out.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->y32, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, out.n, out.c, out.h, out.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, out.c, 1, 1));
  DS_CUDNN(cudnnSetFilter4dDescriptor(p->w, dt, fmt, d.out_c, d.in.c, d.kh, d.kw));
  // Cross-correlation, as Keras and oneDNN compute it (CUDNN_CONVOLUTION would flip the kernel).
  // Compute type FP32 in every mode: 16-bit products accumulate in FP32.
  const bool tf32 = math_ == MathMode::kTf32;
  for (cudnnConvolutionDescriptor_t c : p->conv) {
    DS_CUDNN(cudnnSetConvolution2dDescriptor(c, pad_h, pad_w, d.stride, d.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT));
    DS_CUDNN(cudnnSetConvolutionMathType(c, h16 ? CUDNN_TENSOR_OP_MATH : tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  }

  int n = 0, c = 0, h = 0, w = 0;
  DS_CUDNN(cudnnGetConvolution2dForwardOutputDim(p->conv[kFwdPass], p->x, p->w, &n, &c, &h, &w));
  if (Shape{n, c, h, w} != out)
    throw Error("cuDNN convolution output " + Shape{n, c, h, w}.str() + " differs from expected " + out.str());

  // cuDNN's heuristic ranking of each pass: the fallback after cudnnFind*'s timed entries, and
  // the whole list when timing fails (no memory for the scratch buffers, a cuDNN error).
  const bool fp32 = math_ == MathMode::kFp32;
  std::vector<ConvChoice> heuristic[3];
  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, p->x, p->w, p->conv[kFwdPass], p->y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, fwd));
  heuristic[kFwdPass] = usable_choices(fwd, got, fp32, false, kMaxWorkspace, false);
  cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, p->w, p->y, p->conv[kFwdPass], p->x,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, bd));
  heuristic[kDataPass] = usable_choices(bd, got, fp32, false, kMaxWorkspace, false);
  cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, p->x, p->y, p->conv[kFwdPass], p->w,
                                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, bf));
  heuristic[kFilterPass] = usable_choices(bf, got, fp32, false, kMaxWorkspace, false);

  // The plan is cached either way, so Find runs once per shape and mode.
  std::vector<ConvChoice> found[3];
  p->timed = find_algorithms(d, *p, found);
  for (int k = 0; k < 3; ++k) {
    std::vector<ConvChoice> all = merge_choices(found[k], heuristic[k], fp32 ? int(CUDNN_FMA_MATH) : -1);
    if (all.empty()) throw Error(std::string("cuDNN found no usable ") + kPassNames[k] + " algorithm" + conv_context(d));
    adopt_choice(*p, k, all.front());
    p->untried[k].assign(all.begin() + 1, all.end());
  }
  p->desc = d;

  auto& ref = *p;
  plans_.emplace(key, std::move(p));
  // After the plan is cached: timing runs the passes through conv2d_*, which look it up.
  choose_narrow(d, ref);  // choose_wgrad_gemm waits for the first weight gradient: predict never needs one
  return ref;
}

// Per pass: the narrow kernels or cuDNN. Unless DOWNSCALE_CUDA_NARROW forces it, each pass runs
// both ways on zeroed scratch tensors of the plan's shapes (from the caching allocator, so the
// blocks find_algorithms just returned are reused): once to warm up (module loading, cuDNN's first
// call), then kNarrowReps times between two events; the faster stays. The whole pass is timed
// (padding copies, 16-bit casts, bias), as training runs it. If anything fails, cuDNN stays.
void CudaBackend::choose_narrow(const ConvDesc& d, ConvPlan& p) {
  if (!kernels::narrow_conv_applies(d)) return;
  p.narrow_applies = true;
  if (narrow_mode_ >= 0) {
    p.narrow_fwd = p.narrow_bwd_data = p.narrow_bwd_weights = narrow_mode_ == 1;
    return;
  }
  constexpr int kNarrowReps = 2;
  const Shape out = d.out();
  const int64_t nx = d.in.size(), nw = int64_t(d.out_c) * d.in.c * d.kh * d.kw, ny = out.size();
  float *x = nullptr, *dx = nullptr, *w = nullptr, *dw = nullptr, *b = nullptr, *db = nullptr, *y = nullptr;
  p.timing_paths = true;
  try {
    x = allocate(nx);
    dx = allocate(nx);
    w = allocate(nw);
    dw = allocate(nw);
    b = allocate(d.out_c);
    db = allocate(d.out_c);
    y = allocate(ny);
    for (auto [buf, n] : {std::pair{x, nx}, {w, nw}, {b, int64_t(d.out_c)}, {y, ny}})
      DS_CUDA(cudaMemsetAsync(buf, 0, size_t(n) * sizeof(float), stream_));
    const std::function<void()> passes[3] = {[&] { conv2d_forward(d, x, w, b, y); },
                                             [&] { conv2d_backward_data(d, y, w, dx); },
                                             [&] { conv2d_backward_weights(d, x, y, dw, db); }};
    bool* flags[3] = {&p.narrow_fwd, &p.narrow_bwd_data, &p.narrow_bwd_weights};
    for (int k = 0; k < 3; ++k) {
      for (bool narrow : {false, true}) {
        *flags[k] = narrow;
        (narrow ? p.narrow_ms : p.cudnn_ms)[k] = time_runs(passes[k], kNarrowReps);
      }
      *flags[k] = p.narrow_ms[k] < p.cudnn_ms[k];
    }
  } catch (const Error&) {
    p.narrow_fwd = p.narrow_bwd_data = p.narrow_bwd_weights = false;  // cuDNN, as without this path
    for (int k = 0; k < 3; ++k) p.narrow_ms[k] = p.cudnn_ms[k] = -1;
  }
  cudaGetLastError();  // a failed call leaves no error for the next check to misreport
  p.timing_paths = false;
  for (float* buf : {x, dx, w, dw, b, db, y})
    if (buf) release(buf);
}

float CudaBackend::time_runs(const std::function<void()>& run, int reps) {
  cudaEvent_t start = nullptr, stop = nullptr;
  float ms = 0;
  try {
    DS_CUDA(cudaEventCreate(&start));
    DS_CUDA(cudaEventCreate(&stop));
    run();
    DS_CUDA(cudaEventRecord(start, stream_));
    for (int r = 0; r < reps; ++r) run();
    DS_CUDA(cudaEventRecord(stop, stream_));
    DS_CUDA(cudaEventSynchronize(stop));
    DS_CUDA(cudaEventElapsedTime(&ms, start, stop));
  } catch (...) {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / float(reps);
}

std::string CudaBackend::narrow_summary(const ConvPlan& p) const {
  if (!p.narrow_applies) return "";
  if (narrow_mode_ == 0) return "narrow FP32 kernels off (DOWNSCALE_CUDA_NARROW=0)";
  if (narrow_mode_ == 1) return "narrow FP32 kernels for every pass (DOWNSCALE_CUDA_NARROW=1)";
  if (p.narrow_ms[0] < 0) return "narrow FP32 kernels not used (timing them failed)";
  std::string passes;
  const char* const names[3] = {"forward", "backward data", "backward weights"};
  const bool used[3] = {p.narrow_fwd, p.narrow_bwd_data, p.narrow_bwd_weights};
  for (int k = 0; k < 3; ++k)
    if (used[k]) passes += (passes.empty() ? "" : ", ") + std::string(names[k]);
  char times[160];
  std::snprintf(times, sizeof times, " (ms narrow/cuDNN: forward %.3f/%.3f, data %.3f/%.3f, weights %.3f/%.3f)",
                p.narrow_ms[0], p.cudnn_ms[0], p.narrow_ms[1], p.cudnn_ms[1], p.narrow_ms[2], p.cudnn_ms[2]);
  return "narrow FP32 kernels for " + (passes.empty() ? std::string("no pass") : passes) + times;
}

// Times every algorithm of the three passes once on scratch tensors of the plan's shapes (the
// backward passes write their outputs, so the caller's buffers are never used), as PyTorch's
// cudnn.benchmark does; found[k] gets pass k's usable entries, fastest first. All three or none,
// so a plan's first choices come from one method. Scratch comes from the caching allocator and
// goes back to it, so the next tensors of these sizes reuse it.
bool CudaBackend::find_algorithms(const ConvDesc& d, ConvPlan& p, std::vector<ConvChoice> found[3]) {
  const bool fma_only = math_ == MathMode::kFp32;
  const int64_t nx = p.x_shape.size(), nw = int64_t(d.out_c) * d.in.c * d.kh * d.kw, ny = d.out().size();
  float *x = nullptr, *w = nullptr, *y = nullptr;
  void* ws = nullptr;
  bool ok = false;
  // Inside a lane region (a plan's first use on a lane): the GPU idle, so the timings are not
  // other lanes' kernels; the scratch waited for and released at once, or the allocator's hold
  // would keep every plan's Find workspace (up to 2 GiB each) until the join.
  if (forked_) DS_CUDA(cudaDeviceSynchronize());
  size_t find_ws = find_workspace_bytes();
  try {
    x = allocate(nx);
    w = allocate(nw);
    y = allocate(ny);
    try {
      ws = cache_.allocate(find_ws);
    } catch (const Error&) {  // too large for what is left: time with the old, smaller offer
      cudaGetLastError();
      find_ws = kMinFindWorkspace;
      ws = cache_.allocate(find_ws);
    }
    // Zeros, not whatever the blocks held: NaN or denormal garbage could skew the timings.
    DS_CUDA(cudaMemsetAsync(x, 0, size_t(nx) * sizeof(float), stream_));
    DS_CUDA(cudaMemsetAsync(w, 0, size_t(nw) * sizeof(float), stream_));
    DS_CUDA(cudaMemsetAsync(y, 0, size_t(ny) * sizeof(float), stream_));
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    cudnnConvolutionDescriptor_t conv = p.conv[kFwdPass];  // the requested mode's math type
    if (cudnnFindConvolutionForwardAlgorithmEx(cudnn_, p.x, x, p.w, w, conv, p.y, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                               &got, fwd, ws, find_ws) == CUDNN_STATUS_SUCCESS)
      found[kFwdPass] = usable_choices(fwd, got, fma_only, fma_only, find_ws, true);
    if (!found[kFwdPass].empty() &&
        cudnnFindConvolutionBackwardDataAlgorithmEx(cudnn_, p.w, w, p.y, y, conv, p.x, x,
                                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, bd, ws,
                                                    find_ws) == CUDNN_STATUS_SUCCESS)
      found[kDataPass] = usable_choices(bd, got, fma_only, fma_only, find_ws, true);
    if (!found[kDataPass].empty() &&
        cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn_, p.x, x, p.y, y, conv, p.w, w,
                                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, bf, ws,
                                                      find_ws) == CUDNN_STATUS_SUCCESS)
      found[kFilterPass] = usable_choices(bf, got, fma_only, fma_only, find_ws, true);
    ok = !found[kFwdPass].empty() && !found[kDataPass].empty() && !found[kFilterPass].empty();
  } catch (const Error&) {
    ok = false;  // out of memory for the scratch: the heuristic's ranking stands
  }
  if (!ok)
    for (int k = 0; k < 3; ++k) found[k].clear();
  cudaGetLastError();  // a failed Find leaves no error for the next check to misreport
  if (forked_) {  // waited for: back at once (release() would hold them until the join)
    cudaStreamSynchronize(stream_);
    cudaGetLastError();
  }
  for (void* b : {static_cast<void*>(x), static_cast<void*>(w), static_cast<void*>(y), ws})
    forked_ ? cache_.release_now(b) : cache_.release(b);
  return ok;
}

// Pass k's algorithm becomes c. It runs under the math type it was ranked with; FP32 mode keeps
// FMA math whatever the list said (no tensor-core rounding where the parity tests pin plain
// FP32). The workspace is asked again under that math type (an algorithm ranked with 0 bytes
// under one math type may need more under another: PyTorch issue 9486, OneFlow PR 3460); the
// larger figure is kept. A failing query changes nothing: the call itself then reports.
void CudaBackend::adopt_choice(ConvPlan& p, int k, const ConvChoice& c) {
  const cudnnMathType_t math = math_ == MathMode::kFp32 ? CUDNN_FMA_MATH : cudnnMathType_t(c.math);
  DS_CUDNN(cudnnSetConvolutionMathType(p.conv[k], math));
  size_t asked = 0;
  cudnnStatus_t query = CUDNN_STATUS_SUCCESS;
  if (k == kFwdPass)
    query = cudnnGetConvolutionForwardWorkspaceSize(cudnn_, p.x, p.w, p.conv[k], p.y,
                                                    cudnnConvolutionFwdAlgo_t(c.algo), &asked);
  else if (k == kDataPass)
    query = cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, p.w, p.y, p.conv[k], p.x,
                                                         cudnnConvolutionBwdDataAlgo_t(c.algo), &asked);
  else
    query = cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_, p.x, p.y, p.conv[k], p.w,
                                                           cudnnConvolutionBwdFilterAlgo_t(c.algo), &asked);
  p.use[k] = c;
  p.use[k].math = int(math);
  p.use[k].workspace = workspace_needed(c.workspace, query, asked);
}

void CudaBackend::run_conv_pass(ConvPlan& p, int k, const char* what,
                                const std::function<cudnnStatus_t(int algo, void* ws, size_t bytes)>& call) {
  for (;;) {
    const ConvChoice c = p.use[k];
    void* ws = c.workspace ? workspace(c.workspace) : nullptr;
    const bool clock = pass_times_ && !p.timing_paths;  // no waits inside choose_narrow's timing
    if (clock) pass_clock_start(1);
    const bool inject = test_refuse_ && !p.test_refused[k] && !p.timing_paths;
    if (inject) p.test_refused[k] = true;
    const cudnnStatus_t st = inject ? CUDNN_STATUS_BAD_PARAM : call(c.algo, ws, c.workspace);
    if (st == CUDNN_STATUS_SUCCESS) {
      if (clock) pass_clock_stop(p, k, 1);
      return;
    }
    if (!refused_before_launch(int(st)) || p.untried[k].empty())
      throw Error(std::string("cuDNN error in ") + what + ": " + cudnnGetErrorString(st) +
                  (refused_before_launch(int(st)) ? " (no other algorithm left to try)" : ""));
    const ConvChoice next = p.untried[k].front();
    p.untried[k].erase(p.untried[k].begin());
    std::fprintf(stderr, "cuda: conv %dx%dx%dx%d -> %d channels: %s algorithm %d (math %d, %s) refused: %s; trying %d (math %d, %s)\n",
                 p.desc.in.c, p.desc.in.h, p.desc.in.w, p.desc.kh, p.desc.out_c, kPassNames[k], c.algo, c.math,
                 c.timed ? "cudnnFind" : "heuristic", cudnnGetErrorString(st), next.algo, next.math,
                 next.timed ? "cudnnFind" : "heuristic");
    cudaGetLastError();  // a refusal leaves nothing for the next check to misreport
    adopt_choice(p, k, next);
  }
}

// x as cuDNN sees it: the zero-padded copy when the padding is one cuDNN cannot express
// (asymmetric), else x itself.
const float* CudaBackend::conv_input(const ConvPlan& p, const ConvDesc& d, const float* x) {
  if (!p.explicit_pad) return x;
  float* xp = pad_buffer(p.x_shape.size());
  pad_nchw(stream_, d.in, d.pad_top, d.pad_left, p.x_shape, x, xp);
  return xp;
}

void CudaBackend::conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  conv_forward_pass(d, x, w, b, y, false, false);
}

void* CudaBackend::conv_forward_pass(const ConvDesc& d, const float* x, const float* w, const float* b, float* y,
                                     bool relu, bool keep16) {
  void* kept = nullptr;
  if (keep16 && (relu || b)) throw Error("internal: a kept 16-bit output takes no bias or ReLU" + conv_context(d));
  try {
    ConvPlan& p = conv_plan(d);
    // A narrow convolution without ReLU says once which passes run where (with ReLU,
    // conv2d_relu_forward's line says it).
    if (p.narrow_applies && !p.fuse_reported && !p.timing_paths) {
      p.fuse_reported = true;
      std::fprintf(stderr, "cuda: conv %dx%dx%dx%d -> %d channels: %s\n", d.in.c, d.in.h, d.in.w, d.kh, d.out_c,
                   narrow_summary(p).c_str());
    }
    bool relu_done = false;
    if (pass_times_ && !p.timing_paths) pass_clock_start(0);
    if (p.narrow_fwd) {
      if (keep16) throw Error("internal: a 16-bit output asked of a narrow forward");
      narrow_conv_forward(d, x, w, b, y);
    } else {
      const float one = 1.0f, zero = 0.0f;
      const float* src = conv_input(p, d, x);
      const auto forward = [&](const void* xs, const void* ws_, void* ys) {
        run_conv_pass(p, kFwdPass, "cudnnConvolutionForward", [&](int algo, void* ws, size_t bytes) {
          return cudnnConvolutionForward(cudnn_, &one, p.x, xs, p.w, ws_, p.conv[kFwdPass],
                                         cudnnConvolutionFwdAlgo_t(algo), ws, bytes, &zero, p.y, ys);
        });
      };
      const Shape ws_shape{d.out_c, d.in.c, d.kh, d.kw};
      if (fused16()) {
        void* yh = half16_pass(p.x_shape, src, nullptr, ws_shape, w, nullptr, d.out(), nullptr, forward, true);
        if (keep16) {
          kept = yh;  // the caller widens it (the polyphase interleave) and releases it
        } else {
          const Shape o = d.out();
          const int64_t planes = int64_t(o.n) * o.c, hw = int64_t(o.h) * o.w;
          if (planes > 0 && hw > 0) {  // no grid of 0 blocks
            cast_from_half16_bias_relu_kernel<<<plane_blocks(planes), kThreads, 0, stream_>>>(
                planes, o.c, hw, half16_kind(), static_cast<const uint16_t*>(yh), b, relu, y);
          }
          cache_.release(yh);  // before the launch check: reused only by work queued after this
          DS_CUDA_LAUNCHED();
          relu_done = true;
        }
      } else {
        if (keep16) throw Error("internal: a 16-bit output asked outside the fused 16-bit path");
        if (half16()) {  // the separate casts (NHWC, DOWNSCALE_CUDA_FUSE16=0): as before
          half16_pass(p.x_shape, src, nullptr, ws_shape, w, nullptr, d.out(), y, forward);
          if (b) DS_CUDNN(cudnnAddTensor(cudnn_, &one, p.b, b, &one, p.y32, y));
        } else {
          forward(src, w, y);
          // Bias and ReLU in one pass over y (cudnnAddTensor then a ReLU kernel made two).
          const Shape o = d.out();
          const int64_t planes = int64_t(o.n) * o.c, hw = int64_t(o.h) * o.w;
          if ((b || relu) && planes > 0 && hw > 0) {
            bias_relu_kernel<<<plane_blocks(planes), kThreads, 0, stream_>>>(planes, o.c, hw, b, relu, y);
            DS_CUDA_LAUNCHED();
          }
          relu_done = relu;
        }
      }
    }
    if (pass_times_ && !p.timing_paths) pass_clock_stop(p, kFwdPass, 0);
    if (relu && !relu_done) relu_forward(d.out().size(), y, y);
  } catch (const Error& e) {
    if (kept) cache_.release(kept);
    throw Error(e.what() + conv_context(d), e.code());
  }
  return kept;
}

void CudaBackend::conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  ConvPlan& p = conv_plan(d);
  static const bool enabled = [] {
    const char* v = std::getenv("DOWNSCALE_CUDA_FUSE");
    return !(v && std::string(v) == "0");
  }();
  // cuDNN fuses ReLU only with IMPLICIT_PRECOMP_GEMM; the explicit padding path keeps its copy.
  // Only on FP32 tensors: the 16-bit path's output is the FP32 widening of a 16-bit result, and
  // cuDNN refuses the fused call on those descriptors (CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE on an
  // H100, cuDNN 9.19).
  // The narrow forward is not cuDNN's: its bias and ReLU stay separate.
  const bool fused = enabled && !half16() && b && !p.explicit_pad && !p.narrow_fwd && !p.fuse_refused &&
                     p.use[kFwdPass].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  if (!p.fuse_reported) {
    p.fuse_reported = true;
    const std::string narrow = narrow_summary(p);
    std::fprintf(stderr, "cuda: conv %dx%dx%dx%d -> %d channels: bias+ReLU %s%s%s\n", d.in.c, d.in.h, d.in.w, d.kh,
                 d.out_c,
                 fused ? "fused (cudnnConvolutionBiasActivationForward)"
                 : !enabled ? "separate (DOWNSCALE_CUDA_FUSE=0)"
                 : half16()  ? "separate (16-bit precision)"
                 : p.narrow_fwd ? "separate (narrow forward)"
                            : ("separate (algorithm " + std::to_string(p.use[kFwdPass].algo) +
                               (p.explicit_pad ? ", explicit padding" : "") + ")").c_str(),
                 narrow.empty() ? "" : "; ", narrow.c_str());
  }
  if (fused) {
    if (!relu_) {
      DS_CUDNN(cudnnCreateActivationDescriptor(&relu_));
      DS_CUDNN(cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    }
    const float one = 1.0f, zero = 0.0f;
    const ConvChoice& c = p.use[kFwdPass];
    void* ws = c.workspace ? workspace(c.workspace) : nullptr;
    if (pass_times_) pass_clock_start(0);
    // y = relu(conv(x) + 0 * z + b), with z = y (alpha2 0: its values do not matter).
    const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
        cudnn_, &one, p.x, x, p.w, w, p.conv[kFwdPass], cudnnConvolutionFwdAlgo_t(c.algo), ws, c.workspace, &zero, p.y,
        y, p.b, b, relu_, p.y, y);
    if (st == CUDNN_STATUS_SUCCESS) {
      // The fused call is the convolution call: its bias and ReLU count with it.
      if (pass_times_) pass_clock_stop(p, kFwdPass, 2);
      return;
    }
    if (!refused_before_launch(int(st)))
      throw Error(std::string("cuDNN error in cudnnConvolutionBiasActivationForward: ") + cudnnGetErrorString(st) +
                  conv_context(d));
    // Refused (nothing ran): the separate conv and ReLU from now on, said once.
    cudaGetLastError();
    p.fuse_refused = true;
    std::fprintf(stderr, "cuda: conv %dx%dx%dx%d -> %d channels: fused bias+ReLU refused (%s); separate from now on\n",
                 d.in.c, d.in.h, d.in.w, d.kh, d.out_c, cudnnGetErrorString(st));
  }
  // In the fused 16-bit path the ReLU is applied in the forward's epilogue (one pass over y).
  conv_forward_pass(d, x, w, b, y, true, false);
}

void CudaBackend::conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) {
  conv_backward_data_pass(d, dy, nullptr, w, dx);
}

void CudaBackend::conv_backward_data_pass(const ConvDesc& d, const float* dy, const void* dy16, const float* w,
                                          float* dx) {
  try {
    ConvPlan& p = conv_plan(d);
    if (pass_times_ && !p.timing_paths) pass_clock_start(0);
    if (p.narrow_bwd_data) {
      narrow_conv_backward_data(d, dy, w, dx);
    } else {
      const float one = 1.0f, zero = 0.0f;
      float* dst = p.explicit_pad ? pad_buffer(p.x_shape.size()) : dx;
      const auto data = [&](const void* dys, const void* ws_, void* dxs) {
        run_conv_pass(p, kDataPass, "cudnnConvolutionBackwardData", [&](int algo, void* ws, size_t bytes) {
          return cudnnConvolutionBackwardData(cudnn_, &one, p.w, ws_, p.y, dys, p.conv[kDataPass],
                                              cudnnConvolutionBwdDataAlgo_t(algo), ws, bytes, &zero, p.x, dxs);
        });
      };
      if (half16())
        half16_pass(d.out(), dy, dy16, Shape{d.out_c, d.in.c, d.kh, d.kw}, w, nullptr, p.x_shape, dst, data);
      else
        data(dy, w, dst);
      // The padded border's gradient belongs to zeros that are not inputs: dropped by the crop.
      if (p.explicit_pad) crop_nchw(stream_, p.x_shape, d.pad_top, d.pad_left, d.in, dst, dx);
    }
    if (pass_times_ && !p.timing_paths) pass_clock_stop(p, kDataPass, 0);
  } catch (const Error& e) {
    throw Error(e.what() + conv_context(d), e.code());
  }
}

void CudaBackend::conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) {
  conv_backward_weights_pass(d, x, dy, nullptr, dw, db);
}

void CudaBackend::conv_backward_weights_pass(const ConvDesc& d, const float* x, const float* dy, const void* dy16,
                                             float* dw, float* db) {
  try {
    ConvPlan& p = conv_plan(d);
    if (!p.gemm_chosen && !p.timing_paths) choose_wgrad_gemm(d, p, x, dy, dw);
    if (pass_times_ && !p.timing_paths) pass_clock_start(0);
    if (p.narrow_bwd_weights) {
      narrow_conv_backward_weights(d, x, dy, dw, db);
    } else if (!(p.gemm_bwd_weights && gemm_weights_or_fall_back(d, p, x, dy, dw))) {
      const float one = 1.0f, zero = 0.0f;
      // Padded again rather than kept from forward: a cheap copy instead of a buffer per layer.
      const float* src = conv_input(p, d, x);
      const auto filter = [&](const void* xs, const void* dys, void* dws) {
        run_conv_pass(p, kFilterPass, "cudnnConvolutionBackwardFilter", [&](int algo, void* ws, size_t bytes) {
          return cudnnConvolutionBackwardFilter(cudnn_, &one, p.x, xs, p.y, dys, p.conv[kFilterPass],
                                                cudnnConvolutionBwdFilterAlgo_t(algo), ws, bytes, &zero, p.w, dws);
        });
      };
      if (half16())
        half16_pass(p.x_shape, src, nullptr, d.out(), dy, dy16, Shape{d.out_c, d.in.c, d.kh, d.kw}, dw, filter);
      else
        filter(src, dy, dw);
    }
    if (!p.narrow_bwd_weights && db) {  // the narrow kernels sum db with dw
      const float one = 1.0f, zero = 0.0f;
      if (cudnn_bias_grad_)
        DS_CUDNN(cudnnConvolutionBackwardBias(cudnn_, &one, p.y32, dy, &zero, p.b, db));
      else
        conv_bias_grad(d.out(), dy, db);
    }
    if (pass_times_ && !p.timing_paths) pass_clock_stop(p, kFilterPass, 0);
  } catch (const Error& e) {
    throw Error(e.what() + conv_context(d), e.code());
  }
}

// The whole backward of a convolution (+ ReLU). In the fused 16-bit path the output gradient is
// masked and rounded once (relu_grad_to_half16_at) and both cuDNN passes read that copy, where
// the separate ops made the ReLU's gradient in one pass and each cast it again; the FP32 masked
// gradient (scratch) is still written for the bias gradient. Passes on the narrow FP32 kernels
// read the FP32 copy. Otherwise Backend's composition.
void CudaBackend::conv2d_backward(const ConvDesc& d, const float* x, const float* y, const float* dy, const float* w,
                                  float* dx, float* dw, float* db, float* scratch) {
  if (!fused16()) return Backend::conv2d_backward(d, x, y, dy, w, dx, dw, db, scratch);
  // Both passes on the narrow FP32 kernels (MNN's head): nothing would read a rounded copy.
  const ConvPlan& p = conv_plan(d);
  if ((p.narrow_bwd_weights || !dw) && (p.narrow_bwd_data || !dx))
    return Backend::conv2d_backward(d, x, y, dy, w, dx, dw, db, scratch);
  const Shape o = d.out();
  const int64_t n = o.size();
  void* gh = half16_scratch(o);
  float* g = y ? scratch : nullptr;
  const float* gf = y ? scratch : dy;
  try {
    if (n > 0) {
      relu_grad_to_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, half16_kind(), y, dy, g,
                                                                          static_cast<uint16_t*>(gh));
      DS_CUDA_LAUNCHED();
    }
    if (dw) conv_backward_weights_pass(d, x, gf, gh, dw, db);
    if (dx) conv_backward_data_pass(d, gf, gh, w, dx);
  } catch (...) {
    cache_.release(gh);
    throw;
  }
  cache_.release(gh);
}

// --- DOWNSCALE_CUDA_PASS_TIMES=1 ---
// Each interval gets two fresh events; whole passes do not nest (the polyphase and narrow paths
// call conv2d_* once per pass), nor do library calls, so one open start per kind suffices. At
// most kMaxIntervals are kept (a few thousand steps of MNN), then timing stops: bounded memory.
constexpr size_t kMaxIntervals = size_t(1) << 18;

cudaEvent_t CudaBackend::pass_event() {
  cudaEvent_t e = nullptr;
  DS_CUDA(cudaEventCreate(&e));
  pass_events_.push_back(e);
  return e;
}

void CudaBackend::pass_clock_start(int which) {
  pass_open_[which] = nullptr;
  if (pass_intervals_.size() >= kMaxIntervals) return;
  pass_open_[which] = pass_event();
  DS_CUDA(cudaEventRecord(pass_open_[which], stream_));
}

void CudaBackend::pass_clock_stop(ConvPlan& p, int k, int which) {
  const int open = which == 1 ? 1 : 0;
  if (!pass_open_[open]) return;
  cudaEvent_t stop = pass_event();
  DS_CUDA(cudaEventRecord(stop, stream_));
  pass_intervals_.push_back(PassInterval{&p, k, which, pass_open_[open], stop});
  pass_open_[open] = nullptr;
}

// One line per plan and pass: calls, ms per call whole and in the convolution call, and what ran
// (algorithm, math type, workspace; or the narrow kernels); then the totals, and the share of the
// convolution passes' time spent outside the convolution calls (16-bit casts, padding copies,
// bias): how much 16-bit activations between layers could save (issue 14).
void CudaBackend::report_pass_times() {
  static const char* const modes[] = {"tf32", "fp32", "bf16", "fp16"};
  // Every interval's events were recorded on the one stream: once it is idle, all can be read.
  if (cudaStreamSynchronize(stream_) != cudaSuccess) return;  // the context is gone: nothing to say
  // Each pass's first call is left out: it carries one-time costs (on an H100 the net's first
  // convolution's forward averaged 9.5 ms over 5 calls with its first and 0.24 ms over 4 without:
  // the first call took about 47 ms, most of the outside-cuDNN share of a 3-step run).
  std::set<std::tuple<const ConvPlan*, int, int>> seen;
  for (const PassInterval& t : pass_intervals_) {
    if (seen.insert({t.plan, t.pass, t.which}).second) continue;
    float ms = 0;
    if (cudaEventElapsedTime(&ms, t.start, t.stop) != cudaSuccess) continue;
    if (t.which != 1) {
      t.plan->whole_ms[t.pass] += ms;
      ++t.plan->timed_calls[t.pass];
    }
    if (t.which != 0) t.plan->library_ms[t.pass] += ms;
  }
  pass_intervals_.clear();
  double whole = 0, library = 0;
  bool any = false;
  for (const auto& [key, plan] : plans_) {
    const ConvPlan& p = *plan;
    for (int k = 0; k < 3; ++k) {
      if (p.timed_calls[k] == 0) continue;
      if (!any)
        std::fprintf(stderr, "cuda pass times (DOWNSCALE_CUDA_PASS_TIMES=1, train.precision %s; ms per call, GPU "
                             "time between events, each pass's first call left out; whole = casts, padding and bias "
                             "included):\n", modes[int(math_)]);
      any = true;
      const bool narrow = k == kFwdPass ? p.narrow_fwd : k == kDataPass ? p.narrow_bwd_data : p.narrow_bwd_weights;
      const bool gemm = k == kFilterPass && p.gemm_bwd_weights;
      const double n = double(p.timed_calls[k]);
      std::fprintf(stderr, "  conv %s -> %d, %dx%d, %-15s %6lld calls  whole %8.3f  conv %8.3f  %s\n",
                   p.desc.in.str().c_str(), p.desc.out_c, p.desc.kh, p.desc.kw, kPassNames[k],
                   static_cast<long long>(p.timed_calls[k]), p.whole_ms[k] / n, p.library_ms[k] / n,
                   narrow ? "narrow kernels"
                   : gemm ? "im2col + cuBLAS"
                          : ("algo " + std::to_string(p.use[k].algo) + " math " + std::to_string(p.use[k].math) +
                             " ws " + std::to_string(p.use[k].workspace >> 20) + " MiB" +
                             (p.use[k].timed ? " (cudnnFind)" : " (heuristic)")).c_str());
      whole += p.whole_ms[k];
      library += narrow || gemm ? p.whole_ms[k] : p.library_ms[k];
    }
  }
  if (any)
    std::fprintf(stderr, "cuda pass times: all convolution passes %.3f ms, of which %.3f ms (%.1f %%) outside the "
                         "convolution calls\n", whole, whole - library, whole > 0 ? 100.0 * (whole - library) / whole : 0.0);
}

}  // namespace ds::model
