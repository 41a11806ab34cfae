// The GPU backend: cuDNN for convolutions, small CUDA kernels for everything else, all queued on
// one stream so consecutive ops need no synchronisation between them.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "io/error.h"
#include "model/backend.h"
#include "model/caching_allocator.h"
#include "model/cuda/conv_choices.h"
#include "model/kernels/narrow_conv.h"
#include "model/kernels/polyphase.h"
#include "model/kernels/polyphase_nhwc.h"

namespace ds::model {

// The Net never hands this backend a blocked tensor (its activation_block() is 0); an op that
// got one anyway would read its elements in the wrong order, so it refuses.
inline void no_blocked_activations(int block) {
  if (block != 0)
    throw Error("internal: a channel-blocked activation (block " + std::to_string(block) +
                ") reached the cuda backend, which keeps activations NCHW");
}

// The whole-pass guard for a block taken from the cache: given back when the pass ends or throws
// (later work on the stream is queued after what used it).
struct CacheBlock {
  CachingAllocator& cache;
  void* p = nullptr;
  ~CacheBlock() {
    if (p) cache.release(p);
  }
};

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  std::string name() const override;
  // TF32 (default), FP32, BF16 or FP16: the convolution plans are kept per mode (and 16-bit
  // layout), cuBLAS switches at once.
  bool set_math(MathMode mode) override;
  // 16-bit activations (ConvDesc::x16/y16): the math's 16-bit type under BF16 by default (FP16
  // with DOWNSCALE_CUDA_ACTIVATIONS16=1) with the fused casts (the activations are then the cuDNN
  // operands themselves); FP32 otherwise. In NHWC (BF16's default; act_nhwc()) from the first
  // convolution on, no transposing cast around the convolutions that read and write them; the
  // gradients stay FP32 NCHW.
  DType activation_dtype() const override;
  // Under NHWC activations the narrow kernels (stride 1, out_c <= 4: MNN's head) read FP32 NCHW
  // only: such a convolution neither reads nor writes 16-bit activations (its input, the biggest
  // activation, stays FP32).
  bool conv_activations16(int out_c, int stride) const override;
  bool activations16_nhwc() const override { return act_nhwc(); }
  // For the NCCL communicator (model/cuda/nccl_communicator.cu): its collectives are ordered
  // after the work queued on this stream, and this stream after them.
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

  float* allocate(int64_t n) override;
  void release(float* p) override;
  void copy_from_host(float* dst, const float* host, int64_t n) override;
  void copy_to_host(float* host, const float* src, int64_t n) override;
  void copy(float* dst, const float* src, int64_t n) override;
  void fill(float* p, int64_t n, float value) override;
  void synchronize() override;
  bool all_finite(int64_t n, const float* x) override;
  bool all_finite(const std::vector<FloatSpan>& buffers) override;

  void conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) override;
  void conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) override;
  void conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) override;
  // cuDNN's fused bias+ReLU where the plan's algorithm allows it (IMPLICIT_PRECOMP_GEMM, no
  // explicit padding, FP32 tensors) and it timed faster than the separate passes
  // (choose_fused_bias_relu; DOWNSCALE_CUDA_FUSE=1 always, 0 never); else the convolution, then
  // bias and ReLU in one pass.
  void conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) override;
  // With the fused 16-bit casts (fused16()): the output gradient masked and rounded once for both
  // passes; otherwise Backend's composition.
  void conv2d_backward(const ConvDesc& d, const float* x, const float* y, const float* dy, const float* w, float* dx,
                       float* dw, float* db, float* scratch) override;
  void relu_forward(int64_t n, const float* x, float* y) override;
  void relu_backward(int64_t n, const float* x, const float* dy, float* dx) override;
  void sigmoid_channel_forward(const Shape& s, int channel, float* y) override;
  void sigmoid_channel_backward(const Shape& s, int channel, const float* y, float* dy) override;
  void upsample_nearest_forward(const Shape& in, int factor, const float* x, float* y) override;
  void upsample_nearest_backward(const Shape& in, int factor, const float* dy, float* dx) override;
  // cuda_upsample_conv.cu: the polyphase form (one cuDNN convolution on the small input).
  int64_t upsample_conv2d_scratch(const ConvDesc& d, int factor) const override;
  void upsample_conv2d_forward(const ConvDesc& d, int factor, const float* x, const float* w, const float* b,
                               float* y, float* scratch) override;
  void upsample_conv2d_backward_data(const ConvDesc& d, int factor, const float* dy, const float* w, float* dx,
                                     float* scratch) override;
  void upsample_conv2d_backward_weights(const ConvDesc& d, int factor, const float* x, const float* dy, float* dw,
                                        float* db, float* scratch) override;
  // The bias (and ReLU) in the phase interleave; backward: one masked de-interleave for both
  // small convolutions' backward, the weights folded once.
  void upsample_conv2d_relu_forward(const ConvDesc& d, int factor, const float* x, const float* w, const float* b,
                                    float* y, float* scratch) override;
  int64_t upsample_conv2d_backward_scratch(const ConvDesc& d, int factor, bool relu) const override;
  void upsample_conv2d_backward(const ConvDesc& d, int factor, const float* x, const float* y, const float* dy,
                                const float* w, float* dx, float* dw, float* db, float* scratch) override;
  void copy_channels(const Shape& src, const float* x, const Shape& dst, int offset, float* y) override;
  void slice_channels(const Shape& dst, int offset, const Shape& src, const float* y, float* x) override;
  void copy_channels16(const Shape& src, const uint16_t* x, const Shape& dst, int offset, uint16_t* y) override;
  void relu_backward16(int64_t n, const uint16_t* y, const float* dy, float* dx) override;
  void accumulate(int64_t n, const float* x, float* acc) override;
  void scale(int64_t n, float alpha, float* x) override;
  double bernoulli_gamma_sum(const Shape& out_shape, const float* out, const float* y, const float* mask,
                             float* d_out) override;
  void adam_update(int64_t n, float* w, const float* g, float* m, float* v, float lr_t, float b1, float b2,
                   float eps) override;
  // One launch for all spans (cuda_kernels.cu): the span pointers and the chunk list live in one
  // device block, uploaded again only when the list changes (Adam's is the same every step).
  void adam_update_many(const std::vector<AdamSpan>& spans, float lr_t, float b1, float b2, float eps) override;

  // cuda_ops.cu: cuBLAS for dense, kernels for the rest.
  void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b, float* y) override;
  void dense_backward_data(int n, int in, int out, const float* dy, const float* w, float* dx) override;
  void dense_backward_weights(int n, int in, int out, const float* x, const float* dy, float* dw,
                              float* db) override;
  void pool2d_forward(const PoolDesc& d, const float* x, float* y) override;
  void pool2d_backward(const PoolDesc& d, const float* x, const float* dy, float* dx) override;
  void batch_norm_forward_training(const Shape& s, int block, const float* x, const float* gamma, const float* beta,
                                   float eps, float* y, float* mean, float* var) override;
  void batch_norm_forward_inference(const Shape& s, int block, const float* x, const float* gamma, const float* beta,
                                    const float* mean, const float* var, float eps, float* y) override;
  void batch_norm_backward(const Shape& s, int block, const float* x, const float* dy, const float* gamma,
                           const float* mean, const float* var, float eps, float* dx, float* dgamma,
                           float* dbeta) override;
  void dropout_forward(int64_t n, float rate, uint64_t seed, const float* x, float* y, float* mask) override;
  void multiply(int64_t n, const float* a, const float* b, float* y) override;
  void axpby(int64_t n, float a, const float* x, float b, float* y) override;
  void scatter_points(int n, int k, int points, const float* index, const Shape& grid, float fill, const float* src,
                      float* dst) override;
  void gather_points(int n, int k, int points, const float* index, const Shape& grid, const float* dst_grad,
                     float* src_grad) override;
  double mse_sum(const Shape& out_shape, const float* out, const float* y, const float* mask, float* d_out) override;
  double gaussian_nll_sum(const Shape& out_shape, const float* out, const float* y, const float* mask,
                          float* d_out) override;
  void sgd_momentum_update(int64_t n, float* w, const float* g, float* v, float lr, float momentum) override;
  double softmax_cross_entropy(int n, int k, const float* logits, const float* labels, float* dlogits) override;
  void softmax_cross_entropy_accumulate(int n, int k, const float* logits, const float* labels, float* dlogits,
                                        int64_t step, double* acc) override;

  // cuda_lanes.cu: DOWNSCALE_CUDA_LANES=N (5, the default; 0: one stream) runs the layers the Net marks as
  // lanes (MNN's branches) on N more streams, each with its own cuDNN handle, workspace and
  // padding buffer; fork/join are events; the caching allocator holds releases in between.
  int lanes() const override { return n_lanes_; }
  void fork_lanes() override;
  void set_lane(int lane) override;
  void join_lanes() override;
  // Deferred weight passes (cuda_lanes.cu, DOWNSCALE_CUDA_DEFER_WEIGHTS=1, the default
  // under bf16): between the Net's defer_weight_passes(true) and the next join, each convolution's
  // weight and bias gradients are queued on a lane of their own (after the lanes of
  // DOWNSCALE_CUDA_LANES) instead of the main stream.
  bool defer_weight_passes(bool on) override;

  // cuda_dataflow.cu: the training set on the GPU and the loss without a per-step wait.
  int64_t free_bytes() override;
  void gather_rows(int64_t rows, int64_t row_size, const float* index, const float* src, float* dst) override;
  void loss_sum_accumulate(int kind, const Shape& out_shape, const float* out, const float* y, const float* mask,
                           float* d_out, int64_t valid, double weight, int64_t step, double* acc) override;

 private:
  // The masked loss sums queued into `total` (device memory), without reading them back.
  void queue_bernoulli_gamma_sum(const Shape& s, const float* out, const float* y, const float* mask, float* d_out,
                                 double* total);
  void queue_masked_loss_sum(int kind, const Shape& s, const float* out, const float* y, const float* mask,
                             float* d_out, double* total);
  // One convolution geometry's cuDNN descriptors and chosen algorithms (built in cuda_conv_plan.cu).
  // A plan's passes: the index of its per-pass arrays.
  enum ConvPass { kFwdPass = 0, kDataPass = 1, kFilterPass = 2 };
  static constexpr const char* kPassNames[3] = {"forward", "backward data", "backward filter"};
  struct ConvPlan {
    ConvDesc desc;  // the geometry, for the messages and the pass-time report
    bool explicit_pad = false;
    Shape x_shape;  // what cuDNN sees as input: the padded copy when explicit_pad
    // The input channels of the 16-bit operands x, dx, w and dw a pixel (DOWNSCALE_CUDA_PAD_CHANNELS:
    // x_shape.c rounded up to 8 with zero channels, padded_input_channels); 0: x_shape.c.
    int x_cs = 0;
    // The 16-bit operands' shapes as cuDNN sees them (x_shape, w) with the padded channels.
    Shape x16_shape() const { return x_cs ? Shape{x_shape.n, x_cs, x_shape.h, x_shape.w} : x_shape; }
    // x, y, w: what the convolutions see (BF16/FP16 in the 16-bit modes, NHWC or NCHW); y32 and b:
    // the FP32 NCHW output and bias, for the bias add and its gradient (always FP32).
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, y32 = nullptr, b = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    // One convolution descriptor per pass (ConvPass), each set to the math type cuDNN reported
    // with that pass's algorithm (cudnnFind* ranks algorithm + math type pairs; running an
    // algorithm under another math type than it was found with can fail with
    // CUDNN_STATUS_BAD_PARAM). conv[kFwdPass] also serves the Find calls, in the requested mode.
    cudnnConvolutionDescriptor_t conv[3] = {};
    // Per pass: the algorithm in use (with the math type and the workspace it runs with), and the
    // candidates not yet tried, in order (conv_choices.h). One that cuDNN refuses when training
    // calls it is replaced by the next for good (run_conv_pass).
    ConvChoice use[3];
    std::vector<ConvChoice> untried[3];
    // Per pass, the time of the way it was chosen to run, as timed when the plan was made
    // (cudnnFind*'s for a legacy algorithm, choose_graph_engines' own runs where the graph API
    // was tried; ms, negative when not timed): what DOWNSCALE_CUDA_PAD_CHANNELS=timed compares.
    float chosen_ms[3] = {-1, -1, -1};
    // While two plans of one geometry are made to keep one (DOWNSCALE_CUDA_PAD_CHANNELS=timed):
    // this plan's stderr lines (plan_note) held, said only if it is kept.
    bool hold_notes = false;
    std::vector<std::string> held_notes;
    bool timed = false;  // algorithms from cudnnFind* (else cuDNN's heuristic)
    bool fuse_reported = false;  // the one stderr line (bias+ReLU fused or not, narrow passes)
    bool fuse_refused = false;   // cuDNN refused the fused bias+ReLU call once: separate from then on
    // Whether cuDNN's fused bias+ReLU call beat the separate convolution, bias and ReLU when
    // choose_fused_bias_relu timed both (ms each; negative when not timed).
    bool fuse_chosen = false, fuse_faster = false;
    float fused_ms = -1, separate_ms = -1;
    bool test_refused[3] = {};   // DOWNSCALE_CUDA_TEST_REFUSE: this pass's first call was refused
    // The narrow path (cuda_narrow_conv.cu, stride 1 and out_c <= 4): which passes run there
    // instead of cuDNN, chosen by choose_narrow; the timings behind the choice (ms per pass,
    // forward / backward data / backward weights; negative when not timed).
    bool narrow_applies = false, narrow_fwd = false, narrow_bwd_data = false, narrow_bwd_weights = false;
    // choose_narrow, choose_wgrad_gemm or choose_fused_bias_relu is running the passes (on
    // scratch, or on the first call's own tensors): no pass clocks, no injected refusals, no
    // report yet.
    bool timing_paths = false;
    float narrow_ms[3] = {-1, -1, -1}, cudnn_ms[3] = {-1, -1, -1};
    // The weight gradient as im2col + cuBLAS (cuda_wgrad_gemm.cu) instead of cuDNN's backward
    // filter: where it applies (not a narrow plan), whether it runs, and the two
    // timings behind the choice (ms; negative when not timed).
    bool gemm_chosen = false, gemm_applies = false, gemm_bwd_weights = false;
    float gemm_ms = -1, cudnn_filter_ms = -1;
    // DOWNSCALE_CUDA_PASS_TIMES=1 (pass_times_): per pass, the calls timed and their GPU
    // milliseconds in all, whole (padding copies, 16-bit casts, bias included) and in the
    // convolution call alone (cuDNN's, or the narrow kernel's).
    int64_t timed_calls[3] = {};
    double whole_ms[3] = {}, library_ms[3] = {};
    // cuDNN's graph API (cuda_conv_graph.cu, DOWNSCALE_CUDA_GRAPH): per pass, the execution plan
    // of the fastest engine timed, run when use[pass].algo is kGraphAlgo (the timings behind the
    // choice are in its stderr line); graph_config: the engine configuration the plan was made
    // from, kept alive with it.
    cudnnBackendDescriptor_t graph[3] = {}, graph_config[3] = {};
    // The handle graph[k] was finalized with (the lane that made the plan), and the same engine
    // configuration finalized again for each other handle that runs the pass (graph_plan_here:
    // a deferred weight pass runs on the weights lane's handle). cuDNN does not say that a plan
    // runs under another handle than its own; PyTorch keeps its graph plans per thread, and so
    // per handle. A null plan there: it could not be made for that handle (tried once).
    cudnnHandle_t graph_handle[3] = {};
    mutable std::vector<std::pair<cudnnHandle_t, cudnnBackendDescriptor_t>> graph_other[3];
    // The operation graph, operation, convolution and tensor descriptors graph_config[k] was made
    // from, destroyed after the plans and the configuration: cuDNN does not say that a finalized
    // descriptor set as an attribute is copied, and cudnn-frontend keeps the whole chain alive as
    // long as a plan (an engine holds its graph, the graph its operations, an operation its tensors).
    std::vector<cudnnBackendDescriptor_t> graph_made_from[3];
    // The 16-bit modes' TF32 passes (cuda_conv_tf32.cu, DOWNSCALE_CUDA_TF32_PASSES): per pass,
    // whether it was chosen yet, whether it runs as TF32 (the TF32 plan of the same geometry on
    // FP32 operands), and the two timings behind the choice (ms; negative when not timed).
    bool tf32_chosen[3] = {}, tf32_pass[3] = {};
    float tf32_ms[3] = {-1, -1, -1}, half16_ms[3] = {-1, -1, -1};

    ~ConvPlan() {
      for (int k = 0; k < 3; ++k) {  // the plans, their configuration, what it was made from
        for (const auto& other : graph_other[k])
          if (other.second) cudnnBackendDestroyDescriptor(other.second);
        for (cudnnBackendDescriptor_t g : {graph[k], graph_config[k]})
          if (g) cudnnBackendDestroyDescriptor(g);
        for (cudnnBackendDescriptor_t g : graph_made_from[k])  // the graph first, the tensors last
          if (g) cudnnBackendDestroyDescriptor(g);
      }
      if (x) cudnnDestroyTensorDescriptor(x);
      if (y) cudnnDestroyTensorDescriptor(y);
      if (y32) cudnnDestroyTensorDescriptor(y32);
      if (b) cudnnDestroyTensorDescriptor(b);
      if (w) cudnnDestroyFilterDescriptor(w);
      for (cudnnConvolutionDescriptor_t c : conv)
        if (c) cudnnDestroyConvolutionDescriptor(c);
    }
  };
  // The geometry (12 ints), the math mode and the 16-bit layout (NHWC 1, NCHW 0): a plan's
  // algorithms were chosen for one mode and layout.
  using ConvKey = std::tuple<int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int>;
  ConvKey conv_key(const ConvDesc& d) const;  // plan_key, refusing a 16-bit activation outside the mode
  ConvKey plan_key(const ConvDesc& d) const;
  ConvPlan& conv_plan(const ConvDesc& d);
  const float* conv_input(const ConvPlan& p, const ConvDesc& d, const float* x);
  std::string conv_context(const ConvDesc& d) const;
  // The zeroed operands (as many floats as elements: enough for the 16-bit ones too) and the
  // workspace a plan's passes are timed on, once per plan (find_algorithms, then
  // choose_graph_engines). plan_scratch: false when there is no memory for them (nothing held
  // then); release_plan_scratch gives back what is held (again: nothing). Inside a lane region
  // the GPU is first left idle, so the timings are not other lanes' kernels, and the blocks go
  // straight back, or the allocator's hold would keep every plan's workspace (up to 2 GiB each)
  // until the join.
  struct PlanScratch {
    float *x = nullptr, *w = nullptr, *y = nullptr;
    void* ws = nullptr;
    size_t ws_bytes = 0;
    int64_t x_floats = 0;  // x's length: the plan it was sized for may not be the padded one
  };
  bool plan_scratch(const ConvDesc& d, const ConvPlan& p, PlanScratch& s);
  // conv_plan's parts (cuda_conv_plan.cu): a plan's descriptors with the 16-bit input channels
  // x_cs (0: as d has them) and cuDNN's heuristic list a pass; each pass's choice from Find's and
  // the heuristic's lists, then the graph engines; under DOWNSCALE_CUDA_PAD_CHANNELS=timed, the
  // faster of the padded plan p and the plain one, both with their choices made.
  std::unique_ptr<ConvPlan> plan_descriptors(const ConvDesc& d, int x_cs, std::vector<ConvChoice> heuristic[3]);
  static void plan_note(ConvPlan& p, const ConvDesc& d, const std::string& what);  // conv_note, or held
  void adopt_choices(const ConvDesc& d, ConvPlan& p, std::vector<ConvChoice> heuristic[3],
                     std::vector<ConvChoice> found[3], const PlanScratch& scratch);
  void choose_padding(const ConvDesc& d, std::unique_ptr<ConvPlan>& p, std::unique_ptr<ConvPlan> plain,
                      const PlanScratch& scratch);
  void release_plan_scratch(PlanScratch& s);
  // cudnnFind*: times the algorithms on the scratch; found[ConvPass] gets each pass's usable
  // entries, fastest first; false, with the lists left empty, when any of the three Find calls
  // failed (the caller then keeps the heuristic's choice).
  bool find_algorithms(ConvPlan& p, const PlanScratch& s, std::vector<ConvChoice> found[3]);
  // Makes choice c pass k's algorithm: its descriptor's math type (FMA in FP32 mode) and the
  // workspace cuDNN asks for it under that math type, if more than the ranked figure.
  void adopt_choice(ConvPlan& p, int k, const ConvChoice& c);
  // Pass k's convolution with choice `algo` (a legacy algorithm, or kGraphAlgo: the plan's graph
  // engine) on the cuDNN operands x, w, y, of which the pass writes one (forward y, backward data
  // x, backward filter w); alpha 1, beta 0.
  cudnnStatus_t conv_pass_call(const ConvPlan& p, int k, int algo, const void* x, const void* w, const void* y,
                               void* ws, size_t bytes);
  // Runs pass k with the plan's choice; when cuDNN refuses it before launching anything
  // (conv_choices.h), adopts the next candidate with one stderr line and calls again. Any other
  // failure, or no candidate left, throws.
  void run_conv_pass(ConvPlan& p, int k, const void* x, const void* w, const void* y);
  // cuda_conv_graph.cu: cuDNN's graph (backend) API for a plan's three passes. The legacy
  // cudnnFind* reaches only the legacy algorithms; PyTorch, through the graph API, got MNN's BF16
  // NHWC convolutions 15.3 ms a step on an H200 (2026-11-28) where ours took 18.1 (2026-11-29),
  // the 75 -> 100 5x5 backward data 0.44 ms against 1.13. graph_mode_ (DOWNSCALE_CUDA_GRAPH):
  // 0 never, 1 wherever an engine runs (tests), -1 ("timed") where the fastest engine beats the
  // legacy algorithm on the same scratch tensors; unset, timed under bf16 and never otherwise
  // (set_math; the note above graph_env_ says why).
  // 16-bit modes only. choose_graph_engines runs once per plan, after its legacy choices;
  // graph_execute is a pass's call with the plan's engine (x, w, y: the pass's three operands,
  // whichever it writes), refusing (NOT_SUPPORTED, so run_conv_pass falls back to the legacy
  // algorithm) an operand not aligned as the plan was built for.
  int graph_mode_ = 0;
  // BF16's defaults since 2026-11-30 (set_math resolves each switch left unset: graph_env_,
  // tf32_passes_env_, pad_env_, defer_env_, wgrad_16bit_env_; nullopt = unset): the graph
  // engines, the TF32 backward passes, the padded input channels and the GEMM weight gradient in
  // 16-bit layouts, each by timing per plan, and the deferred weight passes. On an H200
  // (2026-11-30, gpu_check variants, bundle of e8c355f) MNN's BF16 step ran 2319 samples/s with
  // all five against 1797 with none (each alone: graph 2193, TF32 passes 1964, deferral 1938, GEMM
  // 1810, padding 1812), `downscale train` 2378 samples/s (200 North America epochs in 12.3
  // minutes of steps), and every device-check row and parity test passed. TF32, FP32 and FP16
  // keep them off: not timed there. The environment's 0/1/timed overrides either way.
  std::optional<int> graph_env_, tf32_passes_env_, pad_env_;
  std::optional<bool> defer_env_, wgrad_16bit_env_;
  // The five from the environment and math_: at the end of the constructor (math_ tf32, so a
  // backend whose caller never sets a mode, bench/train_ddp.cpp, still takes an explicit =1) and
  // in set_math.
  void resolve_timed_paths();
  // DOWNSCALE_CUDA_GRAPH_NOTES=pytorch: engines with the REDUCED_PRECISION_REDUCTION note are
  // timed too, as PyTorch allows (never DOWN_CONVERT_INPUTS: engine_info in cuda_conv_graph.cu).
  bool graph_reduced_precision_ = false;
  void choose_graph_engines(const ConvDesc& d, ConvPlan& p, const PlanScratch& s);
  cudnnStatus_t graph_execute(cudnnBackendDescriptor_t plan, const void* x, const void* w, const void* y, void* ws);
  // Pass k's graph plan for the current handle (cudnn_): its own where the plan was made on this
  // handle, else the engine configuration finalized for this one once (ConvPlan::graph_other);
  // null where cuDNN refuses that (one line says why; run_conv_pass then runs the legacy
  // algorithm the engine replaced on this handle only, the engine kept for the others).
  cudnnBackendDescriptor_t graph_plan_here(const ConvPlan& p, int k);
  // DOWNSCALE_CUDA_PASS_TIMES=1: events around each pass (whole) and its convolution call
  // (library), recorded on the stream and read only when the backend ends, so timing adds no
  // wait and every figure is the GPU's own time for that pass. The table goes to stderr then.
  bool pass_times_ = false;
  // Env DOWNSCALE_CUDA_TEST_REFUSE=1 (tests only): each plan's first call of each pass is
  // answered as if cuDNN had refused it (BAD_PARAM), so ModelCuda.RefusedAlgorithmIsReplaced
  // runs the fallback on any GPU, not only where cuDNN really refuses one.
  bool test_refuse_ = false;
  // DOWNSCALE_CUDA_TEST_PADDING=padded|plain (tests): DOWNSCALE_CUDA_PAD_CHANNELS=timed's choice made
  // so after both plans are made and timed, so each way of choose_padding runs on a GPU whatever
  // the timings say: 1 padded, 2 plain, 0 by the timings.
  int test_padding_ = 0;
  // A recorded interval not yet read: which 0 whole pass, 1 the library call, 2 both (the fused
  // bias+ReLU call is the convolution call).
  struct PassInterval {
    ConvPlan* plan;
    int pass, which;
    cudaEvent_t start, stop;
  };
  std::vector<PassInterval> pass_intervals_;
  std::vector<cudaEvent_t> pass_events_;  // every event made, destroyed with the backend
  cudaEvent_t pass_open_[2] = {};         // the start event of the interval in progress, per `which`
  cudaEvent_t pass_event();
  void pass_clock_start(int which);  // 0: whole pass, 1: the library call
  void pass_clock_stop(ConvPlan& p, int k, int which);
  // Whether plan p's passes are running for a timing: p's own (timing_paths), or any plan's
  // time_two_ways (timing_depth_: the runs reach other plans, as a 16-bit pass's TF32 plan).
  // Timed runs are not clocked (DOWNSCALE_CUDA_PASS_TIMES=1) and take no injected refusal.
  int timing_depth_ = 0;
  bool timing(const ConvPlan& p) const { return p.timing_paths || timing_depth_ > 0; }
  bool clocked(const ConvPlan& p) const { return pass_times_ && !timing(p); }
  void report_pass_times();  // reads the intervals (one wait), then prints
  // The narrow path for a plan: by DOWNSCALE_CUDA_NARROW (narrow_mode_), else by timing each
  // pass both ways on scratch tensors (cuda_narrow_conv.cu).
  void choose_narrow(const ConvDesc& d, ConvPlan& p);
  // What the plan's one stderr line says about the narrow path ("" when it does not apply).
  std::string narrow_summary(const ConvPlan& p) const;
  // GPU milliseconds of one run(), the mean of `reps` runs between two events after one warm-up
  // run (module loading, a library's first call): choose_narrow's, choose_wgrad_gemm's and choose_fused_bias_relu's clock.
  float time_runs(const std::function<void()>& run, int reps);
  // a then b through time_runs on a first call's own tensors, the plan marked as timing; {-1, -1}
  // when either fails (cuda_conv_plan.cu).
  std::pair<float, float> time_two_ways(ConvPlan& p, const std::function<void()>& a, const std::function<void()>& b);
  // cuda_wgrad_gemm.cu: the weight gradient as im2col + strided-batched cuBLAS GEMMs
  // (model/kernels/wgrad_gemm.h), and the per-plan choice between it and cuDNN's backward filter
  // pass, made at the plan's first weight gradient on that call's own x, dy and dw:
  // DOWNSCALE_CUDA_WGRAD_GEMM=0 never, 1 wherever it applies, unset by timing both once (not yet where
  // it reads 16-bit activations or NHWC operands; "timed" includes those).
  void choose_wgrad_gemm(const ConvDesc& d, ConvPlan& p, const float* x, const float* dy, const void* dy16,
                         float* dw);
  // cuDNN's fused conv+bias+ReLU call with the plan's forward algorithm, and the per-plan choice
  // between it and the separate passes, made at the plan's first conv2d_relu_forward on that
  // call's own tensors (cuda_conv.cu).
  cudnnStatus_t fused_bias_relu_call(ConvPlan& p, const float* x, const float* w, const float* b, float* y);
  void choose_fused_bias_relu(const ConvDesc& d, ConvPlan& p, const float* x, const float* w, const float* b,
                              float* y);
  // dy16: dy rounded to 16 bits (in the 16-bit layout, nhwc_) when the caller has it (16-bit modes),
  // else cast here; x FP32 NCHW, or a 16-bit activation (d.x16) in that layout.
  // timing: choose_wgrad_gemm's runs (scratch goes straight back to the cache inside a lane region).
  void gemm_backward_weights(const ConvDesc& d, const float* x, const float* dy, const void* dy16, float* dw,
                             bool timing);
  // The plan's GEMM, or false after turning the plan back to cuDNN when it fails (not timing).
  bool gemm_weights_or_fall_back(const ConvDesc& d, ConvPlan& p, const float* x, const float* dy, const void* dy16,
                                 float* dw);
  // cuda_conv_tf32.cu: a 16-bit mode's backward data or backward filter pass as train.precision
  // tf32 runs it, on the FP32 operands (dy's FP32 NCHW copy, the FP32 weights; a 16-bit
  // activation x widened first). tf32_instead: whether plan p's pass k runs that way (chosen once
  // per plan and pass by tf32_passes_mode_, timing as_tf32 against in16 on the call's own
  // tensors), and if so has run it. Tf32Scope: math_ as tf32 while it lives.
  struct Tf32Scope;
  void tf32_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx);
  void tf32_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db, bool timing);
  bool tf32_instead(const ConvDesc& d, ConvPlan& p, int k, const std::function<void()>& as_tf32,
                    const std::function<void()>& in16);
  void choose_tf32_pass(const ConvDesc& d, ConvPlan& p, int k, const std::function<void()>& as_tf32,
                        const std::function<void()>& in16);
  // DOWNSCALE_CUDA_TF32_PASSES: 0 never, 1 wherever it applies, -1 ("timed") by timing per plan
  // and pass; unset, timed under bf16 (set_math).
  int tf32_passes_mode_ = 0;
  // cuda_narrow_conv.cu: the three passes in plain FP32 (any math mode).
  void narrow_conv_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y);
  void narrow_conv_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx);
  void narrow_conv_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db);
  // The two passes that read x, for x as float or as a 16-bit activation (uint16_t: d.x16),
  // widened as the kernels load it (cuda_narrow_conv.cu).
  template <typename X>
  void narrow_conv_forward_as(const ConvDesc& d, const X* x, const float* w, const float* b, float* y);
  template <typename X>
  void narrow_conv_backward_weights_as(const ConvDesc& d, const X* x, const float* dy, float* dw, float* db);
  float* narrow_pack(const kernels::NarrowConv& g, const float* w);
  // make_narrow_conv's geometry, with the window kernels off under DOWNSCALE_CUDA_NARROW_WINDOW=0.
  kernels::NarrowConv narrow_geometry(const ConvDesc& d) const;
  // Blocks for n threads of `kernel`; with `bytes` of dynamic shared memory, no more than fit at once.
  int narrow_grid(int64_t n, const void* kernel, size_t bytes);
  int sm_count();
  // Scratch buffers that only grow; safe to share because the ops of a lane run in order on its
  // stream (each lane has its own: cuda_lanes.cu).
  void* workspace(size_t bytes);
  float* pad_buffer(int64_t n);
  // 16-bit activations (cuda_conv.cu): x16 as cuDNN reads it (itself, or a zero-padded 16-bit
  // copy from the cache when the padding is asymmetric: `owned`, for the caller to release). The
  // narrow kernels widen a 16-bit x as they load it (narrow_conv_forward_as).
  const void* conv_input16(const ConvPlan& p, const ConvDesc& d, const float* x16, void*& owned);
  // 16-bit modes (cuda_half16.cu): an FP32 NCHW tensor of `s` rounded to BF16/FP16 in a scratch
  // block from the cache (NHWC when nhwc_), and a 16-bit result widened back into FP32 NCHW.
  bool half16() const { return math_ == MathMode::kBf16 || math_ == MathMode::kFp16; }
  // cs: the 16-bit NHWC side's channels a pixel, when above s.c (DOWNSCALE_CUDA_PAD_CHANNELS; 0:
  // s.c): to_half16 zeroes the channels beyond s.c, from_half16 skips them.
  void* to_half16(const Shape& s, const float* x, int cs = 0);
  void* half16_scratch(const Shape& s, int cs = 0);
  void from_half16(const Shape& s, const void* xh, float* x, int cs = 0);
  kernels::Half16 half16_kind() const;
  // The NHWC scratch's casts as tiled transposes (model/kernels/nhwc_tile.h): FP32 NCHW x of shape
  // s into 16-bit NHWC xh (with y: the ReLU's gradient [y > 0] x, also kept in FP32 in g when g
  // is non-null), and 16-bit NHWC xh widened into FP32 NCHW y with + b and the ReLU on the way.
  void nchw_to_nhwc16(const Shape& s, const float* x, const float* y, float* g, void* xh, int cs = 0);
  void nhwc16_to_nchw(const Shape& s, const void* xh, const float* b, bool relu, float* y, int cs = 0);
  // NHWC activations: the same rounding of x into NHWC xh with the ReLU's mask from its 16-bit
  // NHWC output y16 (nhwc_tile.h's three phases); g as above.
  void nchw_to_nhwc16_masked(const Shape& s, const float* x, const void* y16, float* g, void* xh);
  // The casts fused into the kernels around the convolutions (16-bit modes, unless
  // DOWNSCALE_CUDA_FUSE16=0): cuda_conv.cu's header says which. In either layout; the polyphase
  // interleave's NHWC tile holds up to kMaxPhaseF phases a side (beyond, the separate casts).
  bool fused16() const { return half16() && fuse16_; }
  // 16-bit activations in NHWC (activation_dtype(), nhwc_): what reads or writes a 16-bit
  // activation indexes it NHWC.
  bool act_nhwc() const { return nhwc_ && activation_dtype() != DType::kF32; }
  bool fused16_polyphase(const kernels::Polyphase& p) const {
    return fused16() && (!nhwc_ || p.f <= kernels::kMaxPhaseF);
  }
  // One convolution pass in 16 bits: the FP32 operands a and b rounded into 16-bit scratch (or
  // a16 / b16 when the caller has them rounded already), run(a16, b16, out16) convolves into a
  // 16-bit result, widened into out, or with keep_out returned to the caller (who gives it back
  // to the cache); what this call took from the cache goes back whether run succeeds or throws.
  // The channels a pixel of each 16-bit operand (a, b, out) when above its shape's c (the plan's
  // padded channels, DOWNSCALE_CUDA_PAD_CHANNELS); 0: as the shape says.
  struct ChannelStrides {
    int a, b, out;
  };
  void* half16_pass(const Shape& as, const float* a, const void* a16, const Shape& bs, const float* b,
                    const void* b16, const Shape& out_shape, float* out,
                    const std::function<void(const void*, const void*, void*)>& run, bool keep_out = false,
                    ChannelStrides cs = {0, 0, 0});
  // The three passes behind conv2d_*: relu applies the ReLU after the bias (in the 16-bit
  // epilogue when fused16()); keep16 (fused16_polyphase(), no bias, not a narrow forward) returns
  // the 16-bit output (in the scratch layout) instead of widening it into y; dy16 is dy already
  // rounded (in the scratch layout), not cast again.
  void* conv_forward_pass(const ConvDesc& d, const float* x, const float* w, const float* b, float* y, bool relu,
                          bool keep16);
  void conv_backward_data_pass(const ConvDesc& d, const float* dy, const void* dy16, const float* w, float* dx);
  void conv_backward_weights_pass(const ConvDesc& d, const float* x, const float* dy, const void* dy16, float* dw,
                                  float* db);

  // Lanes (cuda_lanes.cu). Lane 0 is the main stream; the members stream_, cudnn_, cublas_, ws_,
  // ws_bytes_, pad_ and pad_n_ always hold the current lane's, and Lane keeps the others'.
  struct Lane {
    cudaStream_t stream = nullptr;
    cudnnHandle_t cudnn = nullptr;
    cublasHandle_t cublas = nullptr;  // made on the lane's first cuBLAS call (cublas())
    void* ws = nullptr;
    size_t ws_bytes = 0;
    float* pad = nullptr;
    int64_t pad_n = 0;
    cudaEvent_t done = nullptr;  // recorded at the join: the main stream waits on it
    bool used = false;           // since the fork: has waited on the fork event, joins
  };
  int n_lanes_ = 5;  // DOWNSCALE_CUDA_LANES (cuda_backend.cu says why 5)
  int cur_lane_ = 0;
  bool forked_ = false;
  std::vector<Lane> lanes_;  // n_lanes_ + 2 entries once used; [0] is filled when left
  cudaEvent_t fork_event_ = nullptr;
  void switch_lane(int to);
  void destroy_lanes();
  // Deferred weight passes: the lane after the others runs them (lanes_[weights_lane()]).
  bool defer_weights_ = false;    // DOWNSCALE_CUDA_DEFER_WEIGHTS=1 (unset: bf16): defer when the Net asks
  bool defer_on_ = false;         // asked (defer_weight_passes(true)) and not yet stopped
  bool weights_pending_ = false;  // a weight pass queued on the weights lane since the last join
  bool defer_said_ = false;       // the one stderr line said
  cudaEvent_t defer_event_ = nullptr;
  int weights_lane() const { return n_lanes_ + 1; }
  // The main stream's and the branch lanes' priority: one step above the least, which the weights
  // lane has (a deferred weight pass gives way to the chain), and below the greatest, which the
  // NCCL communicator's stream has (an allreduce should not queue behind backward's kernels).
  // Where the device has fewer levels, the least.
  static int compute_priority();
  bool deferring() const { return defer_on_ && !forked_ && cur_lane_ == 0 && timing_depth_ == 0; }
  // Other streams may run and the cache holds releases: inside a lane region, or with weight
  // passes pending. Timings then first wait for the device, and scratch goes back as lanes do.
  bool concurrent() const { return forked_ || weights_pending_; }
  // Runs `pass`, a weight-gradient pass, on the weights lane when deferring (after the work queued
  // so far on the main stream), else here. What it reads must stay unchanged until the join: the
  // activations (kept for the whole step), the layer's own scratch and blocks from the cache
  // (held until the join), never a Net gradient buffer (conv2d_backward copies those).
  void weight_pass(const std::function<void()>& pass);
  // Backend::conv2d_backward's composition (ReLU mask, weights, data) with its weight pass
  // deferred when deferring.
  void conv2d_backward_composed(const ConvDesc& d, const float* x, const float* y, const float* dy, const float* w,
                                float* dx, float* dw, float* db, float* scratch);
  // A copy of src's n floats in a block from the cache that `held` gives back (src itself when
  // n is 0): what a deferred weight pass reads in place of a Net gradient buffer.
  const float* copy_held(CacheBlock& held, const float* src, int64_t n);
  // The polyphase interleave kernels' F = 2 instances for x2 upsamplings (cuda_upsample_conv.cu);
  // DOWNSCALE_CUDA_PHASE_F2=0 runs the run-time-f ones, for the variants table.
  bool phase_f2_ = true;
  // DOWNSCALE_CUDA_PAD_CHANNELS (unset: timed under bf16, set_math): a 16-bit NHWC plan whose input
  // channels are not a multiple of 8 gives cuDNN operands with them rounded up to 8, zero-filled
  // (cuda_conv_plan.cu says why): 1 where the output channels are a multiple of 8, 2 (all)
  // wherever; -1 (timed) where the padded plan's passes, timed as they will run (cudnnFind*, the
  // graph engines), with the copies, beat the plain plan's by 3 % (choose_padding); 0 never.
  int pad_channels_ = 0;
  int padded_input_channels(const ConvDesc& d) const;
  // adam_update_many's device list (span pointers, then chunks from adam_chunks_at), its chunk
  // count and the host spans it was made from.
  void* adam_list_ = nullptr;
  int64_t adam_chunks_ = 0;
  std::vector<AdamSpan> adam_spans_;

  int device_;
  // Every device buffer (tensors, workspace, padding scratch): cudaMalloc only on a miss.
  CachingAllocator cache_;
  MathMode math_ = MathMode::kTf32;
  // Layout of the 16-bit convolution operands (nhwc_) and whether activations between layers are
  // 16-bit (act16_), set by set_math: under BF16 NHWC 16-bit activations, under FP16 NCHW scratch
  // and FP32 activations, unless env DOWNSCALE_CUDA_LAYOUT=nhwc|nchw or
  // DOWNSCALE_CUDA_ACTIVATIONS16=1|0 says otherwise (layout_env_, act16_env_: -1 unset, else
  // the value). Why BF16's: on an H200 (2026-11-29, cuDNN 9.19) MNN trained at 1706 samples/s
  // with NHWC 16-bit activations against 1647 with NCHW scratch and FP32 activations (1641 with
  // NCHW 16-bit activations), 5779 against 5278 forward, and the check passed (parity, device
  // check, 20-step curves). FP16: cuDNN refused some backward-data shapes in NHWC (BAD_PARAM,
  // H100 2026-11-23), and NCHW 16-bit activations were no faster (H200, 2026-11-28).
  bool nhwc_ = false;
  int layout_env_ = -1, act16_env_ = -1;
  // Env DOWNSCALE_CUDA_NARROW: 0 never uses the narrow convolution path, 1 always where it
  // applies (the parity tests), unset (-1) by timing per plan.
  int narrow_mode_ = -1;
  bool narrow_window_ = true;  // DOWNSCALE_CUDA_NARROW_WINDOW=0: the per-pixel/per-tap narrow kernels
  // DOWNSCALE_CUDA_WGRAD_GEMM: 0 never computes weight gradients by im2col + GEMM, 1 always where
  // it applies, unset (-1) by timing per plan. DOWNSCALE_CUDA_WGRAD_GEMM_MB: the most one of its
  // chunks may take beside the tensors (unrolled input and partial sums), 512 MiB by default.
  int wgrad_gemm_mode_ = -1;
  bool wgrad_gemm_16bit_layouts_ = false;  // DOWNSCALE_CUDA_WGRAD_GEMM=timed, or unset under bf16: see choose_wgrad_gemm
  int64_t wgrad_budget_bytes_ = int64_t(512) << 20;
  // DOWNSCALE_CUDA_FUSE: 0 never runs cuDNN's fused conv+bias+ReLU call, 1 always where it
  // applies, unset (-1) by timing it against the separate passes per plan.
  int fuse_mode_ = -1;
  // DOWNSCALE_CUDA_BIAS_GRAD=cudnn: cudnnConvolutionBackwardBias instead of conv_bias_grad.
  bool cudnn_bias_grad_ = false;
  // DOWNSCALE_CUDA_FUSE16=0: the 16-bit paths cast each operand and result in a pass of its own
  // (as before 2026-11-23's fusions) instead of inside the kernels around the convolution.
  bool fuse16_ = true;
  // DOWNSCALE_CUDA_TRANSFORMS=0: no FFT or Winograd algorithm in any mode (FP32 never takes them).
  // A diagnosis switch: a 16-bit test that fails only when timings shift (under compute-sanitizer)
  // and passes with it set failed on the algorithm its timing chose, not on a memory bug.
  bool transforms_ = true;
  bool act16_ = false;  // 16-bit activations (activation_dtype): see nhwc_
  int sm_count_ = 0;  // multiprocessors, asked on first use
  int* d_flag_ = nullptr;  // all_finite's answer
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cudnnActivationDescriptor_t relu_ = nullptr;  // for the fused conv+bias+ReLU, made on first use
  double* d_sum_ = nullptr;  // the loss kernel's accumulator
  void* ws_ = nullptr;  // from cache_, like pad_
  size_t ws_bytes_ = 0;
  float* pad_ = nullptr;
  int64_t pad_n_ = 0;
  std::map<ConvKey, std::unique_ptr<ConvPlan>> plans_;
  // Batch normalization (cuda_batch_norm.cu): cuDNN's spatial batch norm, one pair of tensor
  // descriptors per input shape; the hand-written kernels (cuda_ops.cu, bodies shared with the
  // CPU tests) with DOWNSCALE_CUDA_BN=kernels.
  struct BnPlan {
    cudnnTensorDescriptor_t x = nullptr, stat = nullptr;
    ~BnPlan() {
      if (x) cudnnDestroyTensorDescriptor(x);
      if (stat) cudnnDestroyTensorDescriptor(stat);
    }
  };
  std::map<std::tuple<int, int, int, int>, std::unique_ptr<BnPlan>> bn_plans_;
  BnPlan& bn_plan(const Shape& s);
  bool bn_kernels() const;
  bool bn_kernels_ = false;  // DOWNSCALE_CUDA_BN=kernels (read when the backend is made)
  void bn_kernels_forward_training(const Shape& s, const float* x, const float* gamma, const float* beta, float eps,
                                   float* y, float* mean, float* var);
  void bn_kernels_forward_inference(const Shape& s, const float* x, const float* gamma, const float* beta,
                                    const float* mean, const float* var, float eps, float* y);
  void bn_kernels_backward(const Shape& s, const float* x, const float* dy, const float* gamma, const float* mean,
                           const float* var, float eps, float* dx, float* dgamma, float* dbeta);
  // cuBLAS (the dense layer, the weight gradient by GEMM), created on first use on the current
  // lane's stream (cuda_ops.cu); each lane has its own handle, so no two streams share one's
  // workspace.
  cublasHandle_t cublas_ = nullptr;
  cublasHandle_t cublas();
  void set_cublas_math(cublasHandle_t h);
  // cuda_bias_grad.cu: db[c] = sum of dy over (n, h, w), dy NCHW of shape `out`, in a fixed
  // order (model/kernels/bias_grad.h).
  void conv_bias_grad(const Shape& out, const float* dy, float* db);
  float* fold_weights(const kernels::Polyphase& p, const ConvDesc& small, const float* w);
  // cuda_upsample_conv.cu: the three backward ops through one pass (y null: no ReLU mask; dw
  // null: no weight and bias gradients; dx null: no data gradient).
  void polyphase_backward(const ConvDesc& d, int f, const float* x, const float* y, const float* dy, const float* w,
                          float* dx, float* dw, float* db);
  void polyphase_forward(const ConvDesc& d, int f, const float* x, const float* w, const float* b, float* y,
                         bool relu);
};

// Launch geometry shared by the kernels: grid-stride loops, so any n fits in a bounded grid.
constexpr int kThreads = 256;
inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return int(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}
// Blocks for a kernel with a block per plane (grid-stride beyond the cap); planes > 0.
inline int plane_blocks(int64_t planes) { return int(planes < 65535 ? planes : 65535); }

// One stderr line about a convolution geometry: "cuda: conv CxHxWxK -> O channels: <what>", the
// form gpu_check.sh reads back (which passes left cuDNN, refusals, the weight-gradient choice).
// Info: a -q run (plugin_info_shown() false) prints none of them.
bool plugin_info_shown();  // model/cuda/plugin_log.cpp
void conv_note(const ConvDesc& d, const std::string& what);

// Zero-padding copy and its inverse for convolutions whose padding cuDNN cannot express.
void pad_nchw(cudaStream_t s, const Shape& in, int top, int left, const Shape& padded, const float* x, float* xp);
void pad_nchw16(cudaStream_t s, const Shape& in, int top, int left, const Shape& padded, const uint16_t* x,
                uint16_t* xp);
// padded.c may exceed in.c (channels rounded up to 8, DOWNSCALE_CUDA_PAD_CHANNELS): those are zero.
void pad_nhwc16(cudaStream_t s, const Shape& in, int top, int left, const Shape& padded, const uint16_t* x,
                uint16_t* xp);
void crop_nchw(cudaStream_t s, const Shape& padded, int top, int left, const Shape& out, const float* xp, float* x);

}  // namespace ds::model
