// Convolutions through cuDNN's legacy API (descriptor + algorithm + workspace).
//
// cuDNN pads symmetrically only, but Keras 'same' with an even kernel pads one more row/column at
// the bottom/right. Those convolutions are computed on an explicitly zero-padded copy of the input
// (pad_nchw into a scratch buffer) with cuDNN padding 0, and backward-data crops its result back
// (crop_nchw). Symmetric cases (odd 'same', 'valid') use cuDNN's own padding, no copy.
//
// Math mode is CUDNN_FMA_MATH: plain FP32 FMA kernels, never TF32 tensor cores, so results
// match the CPU backend to float rounding (TF32 would give ~1e-3 relative differences).
#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"

namespace ds::model {

namespace {

// Largest workspace an algorithm may ask for; beyond it the next-best algorithm is taken.
constexpr size_t kMaxWorkspace = size_t(2) << 30;

// cuDNN's heuristics rank the algorithms; the first that works within the workspace cap wins,
// preferring those it reports as FMA math (the descriptor asks for FMA, so this only guards
// against a heuristic that ranks a tensor-core variant first).
// (cudnnFind* would time them, at the cost of running every candidate once per shape.)
template <typename Perf>
const Perf& pick(const Perf* perf, int n, const char* what) {
  for (bool fma_only : {true, false})
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspace &&
          (!fma_only || perf[i].mathType == CUDNN_FMA_MATH))
        return perf[i];
  throw Error(std::string("cuDNN found no usable ") + what + " algorithm");
}

}  // namespace

CudaBackend::ConvPlan& CudaBackend::conv_plan(const ConvDesc& d) {
  ConvKey key{d.in.n, d.in.c, d.in.h, d.in.w, d.out_c, d.kh, d.kw, d.stride,
              d.pad_top, d.pad_bottom, d.pad_left, d.pad_right};
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
  DS_CUDNN(cudnnCreateTensorDescriptor(&p->b));
  DS_CUDNN(cudnnCreateFilterDescriptor(&p->w));
  DS_CUDNN(cudnnCreateConvolutionDescriptor(&p->conv));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, p->x_shape.n, p->x_shape.c,
                                      p->x_shape.h, p->x_shape.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, out.n, out.c, out.h, out.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, out.c, 1, 1));
  DS_CUDNN(cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d.out_c, d.in.c, d.kh, d.kw));
  // Cross-correlation, as Keras and oneDNN compute it (CUDNN_CONVOLUTION would flip the kernel).
  DS_CUDNN(cudnnSetConvolution2dDescriptor(p->conv, pad_h, pad_w, d.stride, d.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT));
  DS_CUDNN(cudnnSetConvolutionMathType(p->conv, CUDNN_FMA_MATH));

  int n = 0, c = 0, h = 0, w = 0;
  DS_CUDNN(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &n, &c, &h, &w));
  if (Shape{n, c, h, w} != out)
    throw Error("cuDNN convolution output " + Shape{n, c, h, w}.str() + " differs from expected " + out.str());

  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, p->x, p->w, p->conv, p->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                  &got, fwd));
  const auto& f = pick(fwd, got, "forward");
  p->fwd_algo = f.algo;
  p->fwd_ws = f.memory;

  cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, p->w, p->y, p->conv, p->x,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, bd));
  const auto& fd = pick(bd, got, "backward-data");
  p->bwd_data_algo = fd.algo;
  p->bwd_data_ws = fd.memory;

  cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, p->x, p->y, p->conv, p->w,
                                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, bf));
  const auto& ff = pick(bf, got, "backward-filter");
  p->bwd_filter_algo = ff.algo;
  p->bwd_filter_ws = ff.memory;

  auto& ref = *p;
  plans_.emplace(key, std::move(p));
  return ref;
}

void CudaBackend::conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  ConvPlan& p = conv_plan(d);
  const float one = 1.0f, zero = 0.0f;
  const float* src = x;
  if (p.explicit_pad) {
    float* xp = pad_buffer(p.x_shape.size());
    pad_nchw(stream_, d.in, d.pad_top, d.pad_left, p.x_shape, x, xp);
    src = xp;
  }
  void* ws = p.fwd_ws ? workspace(p.fwd_ws) : nullptr;
  DS_CUDNN(cudnnConvolutionForward(cudnn_, &one, p.x, src, p.w, w, p.conv, p.fwd_algo, ws, p.fwd_ws, &zero, p.y, y));
  if (b) DS_CUDNN(cudnnAddTensor(cudnn_, &one, p.b, b, &one, p.y, y));
}

void CudaBackend::conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) {
  ConvPlan& p = conv_plan(d);
  const float one = 1.0f, zero = 0.0f;
  float* dst = p.explicit_pad ? pad_buffer(p.x_shape.size()) : dx;
  void* ws = p.bwd_data_ws ? workspace(p.bwd_data_ws) : nullptr;
  DS_CUDNN(cudnnConvolutionBackwardData(cudnn_, &one, p.w, w, p.y, dy, p.conv, p.bwd_data_algo, ws, p.bwd_data_ws,
                                        &zero, p.x, dst));
  // The padded border's gradient belongs to zeros that are not inputs: dropped by the crop.
  if (p.explicit_pad) crop_nchw(stream_, p.x_shape, d.pad_top, d.pad_left, d.in, dst, dx);
}

void CudaBackend::conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) {
  ConvPlan& p = conv_plan(d);
  const float one = 1.0f, zero = 0.0f;
  const float* src = x;
  if (p.explicit_pad) {
    // Padded again rather than kept from forward: a cheap copy instead of a buffer per layer.
    float* xp = pad_buffer(p.x_shape.size());
    pad_nchw(stream_, d.in, d.pad_top, d.pad_left, p.x_shape, x, xp);
    src = xp;
  }
  void* ws = p.bwd_filter_ws ? workspace(p.bwd_filter_ws) : nullptr;
  DS_CUDNN(cudnnConvolutionBackwardFilter(cudnn_, &one, p.x, src, p.y, dy, p.conv, p.bwd_filter_algo, ws,
                                          p.bwd_filter_ws, &zero, p.w, dw));
  if (db) DS_CUDNN(cudnnConvolutionBackwardBias(cudnn_, &one, p.y, dy, &zero, p.b, db));
}

}  // namespace ds::model
