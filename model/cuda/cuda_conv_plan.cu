// A convolution geometry's plan (cuDNN descriptors and chosen algorithms, cached per shape, math
// mode and 16-bit layout): cudnnFind* on scratch tensors, then cuDNN's heuristic list behind it
// (conv_choices.h), the workspace each choice runs with, and the replacement of an algorithm
// cuDNN refuses at call time by the next of its pass's list. The passes themselves are in
// cuda_conv.cu; choose_narrow (cuda_narrow_conv.cu) and choose_wgrad_gemm (cuda_wgrad_gemm.cu)
// time their alternatives with time_runs.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/kernels/narrow_conv.h"

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
//
// FP32 mode also drops the algorithms that convolve in a transformed domain (FFT, FFT tiling,
// Winograd): they round in the transform, not as FP32 products and sums do. Measured on an H100
// (cuDNN 9.19, 2026-11-24): with them, MNN's FP32 step at batch 32 on the North America shapes
// differed from the CPU's FP32 one by 1.1e-2 to 1.3e-2 (relative L2) in the first convolutions'
// weight gradients (sums over batch and grid whose terms mostly cancel, so the transforms' error
// of about 1e-4 weighs a hundred times more), against 3.5e-3 with the weight gradient alone by
// cuBLAS; train.precision fp32 promises plain FP32, and the device check's FP32 rerun relies on it.
// TF32 and the 16-bit modes keep every algorithm: their own rounding is larger than the transforms'.
bool transform_algorithm(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool transform_algorithm(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool transform_algorithm(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

template <typename Perf>
std::vector<ConvChoice> usable_choices(const Perf* perf, int n, bool fma_first, bool fma_only, size_t max_workspace,
                                       bool timed, bool no_transforms) {
  std::vector<ConvChoice> first, rest;  // FP32 mode: FMA math, then the others; else one list
  const bool fp32 = fma_first || fma_only;
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_workspace ||
        perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
        ((fp32 || no_transforms) && transform_algorithm(perf[i].algo)))
      continue;
    const bool later = (fma_first || fma_only) && perf[i].mathType != CUDNN_FMA_MATH;
    ConvChoice c{int(perf[i].algo), int(perf[i].mathType), perf[i].memory, timed};
    if (timed) c.ms = perf[i].time;
    (later ? rest : first).push_back(c);
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

// A pass's workspace: what its ranked entry said, or more if cuDNN asks more for the algorithm
// under the math type the descriptor now has (cudnnFind* measured each algorithm per math type;
// an algorithm run with less workspace than its math type needs fails, as PyTorch issue 9486 and
// OneFlow PR 3460 describe). A failing query changes nothing: the call itself then reports.
size_t workspace_needed(size_t ranked, cudnnStatus_t query, size_t asked) {
  return query == CUDNN_STATUS_SUCCESS && asked > ranked ? asked : ranked;
}

}  // namespace

void conv_note(const ConvDesc& d, const std::string& what) {
  if (!plugin_info_shown()) return;
  std::fprintf(stderr, "cuda: conv %dx%dx%dx%d -> %d channels: %s\n", d.in.c, d.in.h, d.in.w, d.kh, d.out_c,
               what.c_str());
}

// What a failing convolution was, appended to its error: cuDNN may lack a 16-bit kernel for one
// layout or shape, and the one line must say which (mode, layout, geometry).
// With the plan's choices when it exists (algorithm, math type and workspace per pass, and whether
// cudnnFind* or the heuristic chose them), so a failure on a GPU says what ran without a rerun.
std::string CudaBackend::conv_context(const ConvDesc& d) const {
  static const char* const modes[] = {"tf32", "fp32", "bf16", "fp16"};
  std::string plan;
  const auto it = plans_.find(plan_key(d));  // not conv_key: an error's context must not throw
  if (it != plans_.end()) {
    const ConvPlan& p = *it->second;
    const char* const names[3] = {"fwd", "data", "filter"};  // indexed by ConvPass
    for (int k = 0; k < 3; ++k)
      plan += std::string(k ? ", " : "; ") + names[k] +
              (p.use[k].algo == kGraphAlgo ? " graph engine " + std::to_string(p.use[k].engine)
                                           : " algo " + std::to_string(p.use[k].algo) + " math " +
                                                 std::to_string(p.use[k].math)) +
              " ws " + std::to_string(p.use[k].workspace);
    plan += std::string(p.timed ? " (cudnnFind)" : " (heuristic)") + (p.explicit_pad ? ", explicit padding" : "") +
            (p.gemm_bwd_weights ? ", weight gradient by im2col + cuBLAS" : "");
  }
  return std::string(" [convolution ") + d.in.str() + " -> " + std::to_string(d.out_c) + " channels, " +
         std::to_string(d.kh) + "x" + std::to_string(d.kw) + ", train.precision " + modes[int(math_)] +
         (half16() ? std::string(", DOWNSCALE_CUDA_LAYOUT ") + (nhwc_ ? "nhwc" : "nchw") : std::string()) + plan + "]";
}

CudaBackend::ConvKey CudaBackend::conv_key(const ConvDesc& d) const {
  // Every convolution passes here first: a 16-bit activation outside the mode that takes them
  // (activation_dtype(); the Net plans none then) is refused rather than misread.
  if ((d.x16 || d.y16) && activation_dtype() == DType::kF32)
    throw Error("cuda backend: a 16-bit activation outside DOWNSCALE_CUDA_ACTIVATIONS16=1 with bf16/fp16 and fused "
                "casts (" + d.in.str() + ")");
  if ((d.x16 || d.y16) && !conv_activations16(d.out_c, d.stride))
    throw Error("internal: a 16-bit NHWC activation for a narrow convolution, whose kernels read FP32 NCHW (" +
                d.in.str() + ")");
  return plan_key(d);
}

CudaBackend::ConvKey CudaBackend::plan_key(const ConvDesc& d) const {
  // x16/y16 are part of the key: the narrow and GEMM choices differ (both take FP32 operands).
  return ConvKey{d.in.n,     d.in.c,     d.in.h,    d.in.w,      d.out_c,    d.kh,
                 d.kw,       d.stride,   d.pad_top, d.pad_bottom, d.pad_left, d.pad_right,
                 int(math_), half16() && nhwc_ ? 1 : 0, d.x16 ? 1 : 0, d.y16 ? 1 : 0};
}

// Channels padded to 8 (DOWNSCALE_CUDA_PAD_CHANNELS=1). cuDNN's tensor-core kernels load 16 bytes
// at a time: 8 BF16/FP16 channels of an NHWC pixel. With C not a multiple of 8 a 16-bit pass runs
// on kernels of a smaller alignment. On the H200 (2026-11-28/29) MNN's largest convolution, the
// polyphase 100 -> 528 5x5 (up2_conv1, about 6.3 of the 18.6 ms BF16 step in its three cuDNN
// calls), ran at about 290 TFLOP/s in BF16 (200 bytes a pixel), 29 % of the dense peak, where TF32
// (400 bytes, aligned) reached about 45 % of its own, and its BF16 backward data (2.63 ms) was
// slower than TF32's (2.18). With C rounded up to 8 (100 -> 104: 4 % more multiply-adds; 50 -> 56
// for up1_conv1's 50 -> 200) the padded channels are zero in x and w, so y is unchanged; dx and dw
// get extra channels that the widening drops. DOWNSCALE_CUDA_PAD_CHANNELS=1 pads only where out_c
// is a multiple of 8 already (both polyphase convolutions), =all wherever C is not: the same
// H200 run had up1_conv3's 75 -> 100 BF16 backward data (dx of 75 channels) at 1.06 ms against
// 0.33 for its forward, and the 50 -> 25 branch weight gradients at 0.38-0.47 ms against 0.04-0.14
// for their forwards. Output channels are not padded (that would reach every activation's
// layout); bench/conv_layouts.py's "bf16 nhwc8" column measures whether padding both would pay.
// =timed considers what =all pads, and pads a plan only where its three padded passes, timed as
// they will run (cudnnFind*, then the graph engines where on), with the copy padding adds, beat
// the plain ones by 3 % (choose_padding): padding where it measured faster, whichever of cuDNN's
// kernels each alignment turns out to reach.
// The FP32, TF32, NCHW and narrow plans never pad.
int CudaBackend::padded_input_channels(const ConvDesc& d) const {
  if (!pad_channels_ || !half16() || !nhwc_ || d.in.c % 8 == 0) return 0;
  if (pad_channels_ == 1 && d.out_c % 8 != 0) return 0;
  if (kernels::narrow_conv_applies(d)) return 0;  // MNN's head: its passes go to the narrow kernels
  return (d.in.c + 7) / 8 * 8;
}

// A plan's cuDNN descriptors for geometry d with the 16-bit operands' input channels x_cs (0: as
// d has them), and cuDNN's heuristic ranking of each pass: the fallback after cudnnFind*'s timed
// entries, and the whole list when timing fails (no memory for the scratch buffers, a cuDNN error).
std::unique_ptr<CudaBackend::ConvPlan> CudaBackend::plan_descriptors(const ConvDesc& d, int x_cs,
                                                                     std::vector<ConvChoice> heuristic[3]) {
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
  p->x_cs = x_cs;
  const Shape x16 = p->x16_shape();
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
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->x, fmt, dt, x16.n, x16.c, x16.h, x16.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->y, fmt, dt, out.n, out.c, out.h, out.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->y32, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, out.n, out.c, out.h, out.w));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, out.c, 1, 1));
  DS_CUDNN(cudnnSetFilter4dDescriptor(p->w, dt, fmt, d.out_c, x16.c, d.kh, d.kw));
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

  const bool fp32 = math_ == MathMode::kFp32;
  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, p->x, p->w, p->conv[kFwdPass], p->y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, fwd));
  heuristic[kFwdPass] = usable_choices(fwd, got, fp32, false, kMaxWorkspace, false, !transforms_);
  cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, p->w, p->y, p->conv[kFwdPass], p->x,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, bd));
  heuristic[kDataPass] = usable_choices(bd, got, fp32, false, kMaxWorkspace, false, !transforms_);
  cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  DS_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, p->x, p->y, p->conv[kFwdPass], p->w,
                                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, bf));
  heuristic[kFilterPass] = usable_choices(bf, got, fp32, false, kMaxWorkspace, false, !transforms_);
  return p;
}

CudaBackend::ConvPlan& CudaBackend::conv_plan(const ConvDesc& d) {
  no_blocked_activations(d.x_block);
  no_blocked_activations(d.y_block);
  const ConvKey key = conv_key(d);
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;

  // Under DOWNSCALE_CUDA_PAD_CHANNELS=timed the padded descriptors are made first: their scratch
  // is the larger, and serves the plain descriptors after them (choose_padding). A padded plan
  // that cannot be made (no usable algorithm) then leaves the layer as written, with one line.
  const int pad = padded_input_channels(d);
  const bool timed_padding = pad && pad_channels_ == -1;
  std::vector<ConvChoice> heuristic[3];
  // The plan is cached either way, so Find runs once per shape and mode.
  std::vector<ConvChoice> found[3];
  PlanScratch scratch;
  struct Release {  // however conv_plan leaves
    CudaBackend* b;
    PlanScratch* s;
    ~Release() { b->release_plan_scratch(*s); }
  } release{this, &scratch};
  std::unique_ptr<ConvPlan> p;
  try {
    p = plan_descriptors(d, pad, heuristic);
    p->timed = plan_scratch(d, *p, scratch) && find_algorithms(*p, scratch, found);
    p->hold_notes = timed_padding;
    adopt_choices(d, *p, heuristic, found, scratch);
  } catch (const Error& e) {
    if (!timed_padding) throw;
    cudaGetLastError();
    conv_note(d, "input channels as written, not padded to " + std::to_string(pad) +
                     " by timing (DOWNSCALE_CUDA_PAD_CHANNELS=timed): the padded plan failed: " + e.what());
    p.reset();
  }
  if (timed_padding) {  // the same for the plain descriptors, then the faster
    std::vector<ConvChoice> plain_heuristic[3], plain_found[3];
    std::unique_ptr<ConvPlan> plain = plan_descriptors(d, 0, plain_heuristic);
    plain->timed = (scratch.x || plan_scratch(d, *plain, scratch)) && find_algorithms(*plain, scratch, plain_found);
    plain->hold_notes = true;
    adopt_choices(d, *plain, plain_heuristic, plain_found, scratch);
    if (p)
      choose_padding(d, p, std::move(plain), scratch);
    else
      p = std::move(plain);
    // The kept plan's lines (its graph engines), now that they are the ones that hold.
    p->hold_notes = false;
    for (const std::string& note : p->held_notes) conv_note(d, note);
    p->held_notes.clear();
  }
  release_plan_scratch(scratch);  // before choose_narrow, which times on scratch of its own

  auto& ref = *p;
  plans_.emplace(key, std::move(p));
  // Which algorithm each pass runs, once per plan, in the words an error's context uses (mode,
  // layout, geometry; algorithm, math and workspace a pass; cudnnFind or heuristic): a tolerance
  // miss in a parity test can then be told from the log (a transform algorithm in 16 bits;
  // another choice under the sanitizer).
  conv_note(d, "cuDNN plan" + conv_context(d) + (transforms_ ? "" : "; DOWNSCALE_CUDA_TRANSFORMS=0") +
                   (ref.x_cs ? "; input channels padded to " + std::to_string(ref.x_cs) + " (DOWNSCALE_CUDA_PAD_CHANNELS)"
                             : std::string()));
  // After the plan is cached: timing runs the passes through conv2d_*, which look it up.
  choose_narrow(d, ref);  // choose_wgrad_gemm waits for the first weight gradient: predict never needs one
  return ref;
}

void CudaBackend::plan_note(ConvPlan& p, const ConvDesc& d, const std::string& what) {
  if (p.hold_notes)
    p.held_notes.push_back(what);
  else
    conv_note(d, what);
}

// Each pass's algorithm: cudnnFind*'s fastest usable entry (its time in chosen_ms), else the
// heuristic's first, the rest of both lists behind it for refusals at call time; then, timed, the
// graph API's engines against it (DOWNSCALE_CUDA_GRAPH; before choose_narrow, which then times
// the narrow kernels against whichever runs).
void CudaBackend::adopt_choices(const ConvDesc& d, ConvPlan& p, std::vector<ConvChoice> heuristic[3],
                                std::vector<ConvChoice> found[3], const PlanScratch& scratch) {
  const bool fp32 = math_ == MathMode::kFp32;
  for (int k = 0; k < 3; ++k) {
    std::vector<ConvChoice> all = merge_choices(found[k], heuristic[k], fp32 ? int(CUDNN_FMA_MATH) : -1);
    if (all.empty()) throw Error(std::string("cuDNN found no usable ") + kPassNames[k] + " algorithm" + conv_context(d));
    adopt_choice(p, k, all.front());
    p.chosen_ms[k] = all.front().ms;
    p.untried[k].assign(all.begin() + 1, all.end());
  }
  p.desc = d;
  if (p.timed) choose_graph_engines(d, p, scratch);
}

// DOWNSCALE_CUDA_PAD_CHANNELS=timed: p is the plan on padded descriptors, plain the same geometry
// as written, each with its choices made (adopt_choices: cudnnFind*, then the graph engines where
// they are on) on the same scratch, sized for p. The copy padding adds is timed on its own, and p
// becomes plain unless padding_pays (conv_choices.h) on the times of the ways each plan's passes
// will run. One line says which and the times behind it. The TF32 passes and the GEMM weight
// gradient are chosen later, on a first call's tensors, against whichever plan stays.
void CudaBackend::choose_padding(const ConvDesc& d, std::unique_ptr<ConvPlan>& p, std::unique_ptr<ConvPlan> plain,
                                 const PlanScratch& scratch) {
  // The copy into the padded layout that a 16-bit activation read in place would not need, run
  // twice a step (forward, backward filter): timed here on the scratch x, which holds as many
  // floats as the padded operand has elements, so twice its 16-bit elements: the source (d.in)
  // in its first part, the padded copy after it. An FP32 input is cast into 16 bits anyway, and
  // an explicitly padded one copied anyway: padding its channels there adds nothing.
  float extra_ms = 0;
  if (d.x16 && !p->explicit_pad) {
    extra_ms = -1;  // unknown (no scratch, a failed run): padding_pays keeps the plain operands
    const Shape padded = p->x16_shape();
    // The scratch is the plain plan's where the padded one's could not be had (out of memory):
    // too short for both 16-bit copies, and then not timed.
    if (scratch.x && 2 * scratch.x_floats >= d.in.size() + padded.size()) {
      auto* src = reinterpret_cast<uint16_t*>(scratch.x);
      uint16_t* dst = src + d.in.size();
      try {
        extra_ms = 2 * time_runs([&] { pad_nhwc16(stream_, d.in, 0, 0, padded, src, dst); }, 2);
      } catch (const Error&) {
        cudaGetLastError();
      }
    }
  }
  const bool pad = test_padding_ ? test_padding_ == 1 : padding_pays(plain->chosen_ms, p->chosen_ms, extra_ms);
  char times[200];
  std::snprintf(times, sizeof times, " (ms fwd+data+filter padded %.3f+%.3f+%.3f, copies %.3f; as written "
                "%.3f+%.3f+%.3f)", p->chosen_ms[0], p->chosen_ms[1], p->chosen_ms[2], extra_ms, plain->chosen_ms[0],
                plain->chosen_ms[1], plain->chosen_ms[2]);
  conv_note(d, std::string(pad ? "input channels padded to " + std::to_string(p->x_cs)
                               : "input channels as written, not padded to " + std::to_string(p->x_cs)) +
                   " by timing (DOWNSCALE_CUDA_PAD_CHANNELS=timed)" + times +
                   (test_padding_ ? "; forced by DOWNSCALE_CUDA_TEST_PADDING" : ""));
  if (!pad) p = std::move(plain);
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

// For the per-plan choices made on a first call's own tensors (choose_wgrad_gemm,
// choose_fused_bias_relu): a then b, each a warm-up then two runs between events, with the plan
// marked as timing (no pass clocks, no injected refusals). Inside a lane region the GPU is first
// left idle, so the timings are not other lanes' kernels (as find_algorithms does), and the
// cache's hold is lifted for the timing (below). -1 for a way that throws ds::Error, and for b
// when a throws (the caller keeps its default), with no CUDA error left behind; any
// other exception passes through with the mark undone.
std::pair<float, float> CudaBackend::time_two_ways(ConvPlan& p, const std::function<void()>& a,
                                                   const std::function<void()>& b) {
  constexpr int kReps = 2;
  // Inside a lane region, or with weight passes deferred, the cache holds every release until the
  // join (caching_allocator.h): each timed run would take fresh blocks from cudaMalloc inside the
  // timed interval, and the way that releases more scratch (a 16-bit pass's casts) would look the
  // slower. Once the device is idle nothing held is in use, so the hold is lifted for the timing,
  // whose runs are all on this one stream, and put back after it, however this returns.
  struct Unhold {
    CachingAllocator& cache;
    bool on;
    cudaStream_t stream;
    ~Unhold() {
      if (!on) return;
      // A way that threw may have left work queued on blocks it released (into the cache, not
      // held): done before another lane can be handed them.
      cudaStreamSynchronize(stream);
      cudaGetLastError();
      cache.hold_releases(true);
    }
  } unhold{cache_, concurrent() && timing_depth_ == 0, stream_};  // nested: the outer one lifted it
  if (unhold.on) {
    DS_CUDA(cudaDeviceSynchronize());
    cache_.hold_releases(false);
  }
  p.timing_paths = true;
  // Other plans the runs reach (a 16-bit pass's TF32 plan, cuda_conv_tf32.cu) are timing too:
  // no pass clocks, no injected refusals there either; their own choices are still made.
  struct Depth {
    int& d;
    explicit Depth(int& v) : d(v) { ++d; }
    ~Depth() { --d; }
  } depth(timing_depth_);
  std::pair<float, float> ms{-1, -1};
  try {
    ms.first = time_runs(a, kReps);
    ms.second = time_runs(b, kReps);
  } catch (const Error&) {
    // The failed way's time stays -1 (the caller keeps its default); a time already taken stays
    // for the caller's line. The error is cleared below.
  } catch (...) {  // not a CUDA or cuDNN failure (out of host memory): the plan's mark undone, passed on
    p.timing_paths = false;
    throw;
  }
  cudaGetLastError();  // a failed call leaves no error for the next check to misreport
  p.timing_paths = false;
  return ms;
}

bool CudaBackend::plan_scratch(const ConvDesc& d, const ConvPlan& p, PlanScratch& s) {
  if (concurrent()) DS_CUDA(cudaDeviceSynchronize());
  const int64_t nx = p.x16_shape().size(), nw = int64_t(d.out_c) * p.x16_shape().c * d.kh * d.kw, ny = d.out().size();
  s.ws_bytes = find_workspace_bytes();
  try {
    s.x = allocate(nx);
    s.x_floats = nx;
    s.w = allocate(nw);
    s.y = allocate(ny);
    try {
      s.ws = cache_.allocate(s.ws_bytes);
    } catch (const Error&) {  // too large for what is left: time with the old, smaller offer
      cudaGetLastError();
      s.ws_bytes = kMinFindWorkspace;
      s.ws = cache_.allocate(s.ws_bytes);
    }
    // Zeros, not whatever the blocks held: NaN or denormal garbage could skew the timings.
    DS_CUDA(cudaMemsetAsync(s.x, 0, size_t(nx) * sizeof(float), stream_));
    DS_CUDA(cudaMemsetAsync(s.w, 0, size_t(nw) * sizeof(float), stream_));
    DS_CUDA(cudaMemsetAsync(s.y, 0, size_t(ny) * sizeof(float), stream_));
    return true;
  } catch (const Error&) {  // out of memory for the scratch: the heuristic's ranking stands
    cudaGetLastError();
    release_plan_scratch(s);
    return false;
  }
}

void CudaBackend::release_plan_scratch(PlanScratch& s) {
  if (!s.x && !s.w && !s.y && !s.ws) return;
  if (concurrent()) {  // waited for: back at once (release() would hold them until the join)
    cudaStreamSynchronize(stream_);
    cudaGetLastError();
  }
  for (void* b : {static_cast<void*>(s.x), static_cast<void*>(s.w), static_cast<void*>(s.y), s.ws})
    if (b) concurrent() ? cache_.release_now(b) : cache_.release(b);
  s = PlanScratch{};
}

// Times every algorithm of the three passes once on the plan's scratch (the backward passes
// write their outputs, so the caller's buffers are never used), as PyTorch's cudnn.benchmark
// does; found[k] gets pass k's usable entries, fastest first. All three or none, so a plan's
// first choices come from one method.
bool CudaBackend::find_algorithms(ConvPlan& p, const PlanScratch& s, std::vector<ConvChoice> found[3]) {
  const bool fma_only = math_ == MathMode::kFp32;
  float *x = s.x, *w = s.w, *y = s.y;
  void* ws = s.ws;
  const size_t find_ws = s.ws_bytes;
  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  cudnnConvolutionBwdDataAlgoPerf_t bd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  cudnnConvolutionBwdFilterAlgoPerf_t bf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  cudnnConvolutionDescriptor_t conv = p.conv[kFwdPass];  // the requested mode's math type
  if (cudnnFindConvolutionForwardAlgorithmEx(cudnn_, p.x, x, p.w, w, conv, p.y, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                             &got, fwd, ws, find_ws) == CUDNN_STATUS_SUCCESS)
    found[kFwdPass] = usable_choices(fwd, got, fma_only, fma_only, find_ws, true, !transforms_);
  if (!found[kFwdPass].empty() &&
      cudnnFindConvolutionBackwardDataAlgorithmEx(cudnn_, p.w, w, p.y, y, conv, p.x, x,
                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, bd, ws,
                                                  find_ws) == CUDNN_STATUS_SUCCESS)
    found[kDataPass] = usable_choices(bd, got, fma_only, fma_only, find_ws, true, !transforms_);
  if (!found[kDataPass].empty() &&
      cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn_, p.x, x, p.y, y, conv, p.w, w,
                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, bf, ws,
                                                    find_ws) == CUDNN_STATUS_SUCCESS)
    found[kFilterPass] = usable_choices(bf, got, fma_only, fma_only, find_ws, true, !transforms_);
  const bool ok = !found[kFwdPass].empty() && !found[kDataPass].empty() && !found[kFilterPass].empty();
  if (!ok)
    for (int k = 0; k < 3; ++k) found[k].clear();
  cudaGetLastError();  // a failed Find leaves no error for the next check to misreport
  return ok;
}

// Pass k's algorithm becomes c. It runs under the math type it was ranked with; FP32 mode keeps
// FMA math whatever the list said (no tensor-core rounding where the parity tests pin plain
// FP32). The workspace is asked again under that math type (an algorithm ranked with 0 bytes
// under one math type may need more under another: PyTorch issue 9486, OneFlow PR 3460); the
// larger figure is kept. A failing query changes nothing: the call itself then reports.
void CudaBackend::adopt_choice(ConvPlan& p, int k, const ConvChoice& c) {
  if (c.algo == kGraphAlgo) {  // a graph engine: no descriptor math type, its plan's own workspace
    p.use[k] = c;
    return;
  }
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

cudnnStatus_t CudaBackend::conv_pass_call(const ConvPlan& p, int k, int algo, const void* x, const void* w,
                                          const void* y, void* ws, size_t bytes) {
  if (algo == kGraphAlgo) return graph_execute(graph_plan_here(p, k), x, w, y, ws);
  const float one = 1.0f, zero = 0.0f;
  if (k == kFwdPass)
    return cudnnConvolutionForward(cudnn_, &one, p.x, x, p.w, w, p.conv[k], cudnnConvolutionFwdAlgo_t(algo), ws,
                                   bytes, &zero, p.y, const_cast<void*>(y));
  if (k == kDataPass)
    return cudnnConvolutionBackwardData(cudnn_, &one, p.w, w, p.y, y, p.conv[k], cudnnConvolutionBwdDataAlgo_t(algo),
                                        ws, bytes, &zero, p.x, const_cast<void*>(x));
  return cudnnConvolutionBackwardFilter(cudnn_, &one, p.x, x, p.y, y, p.conv[k],
                                        cudnnConvolutionBwdFilterAlgo_t(algo), ws, bytes, &zero, p.w,
                                        const_cast<void*>(w));
}

void CudaBackend::run_conv_pass(ConvPlan& p, int k, const void* x, const void* w, const void* y) {
  static const char* const calls[3] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                                       "cudnnConvolutionBackwardFilter"};  // indexed by ConvPass
  for (;;) {
    ConvChoice c = p.use[k];
    // An engine whose plan this lane's cuDNN handle could not have (graph_plan_here said why,
    // once): the legacy algorithm it replaced (first in the untried list) runs on this lane, and
    // the engine stays for the handles that have it; adopting the legacy algorithm, as a refusal
    // does, would take the engine from every lane.
    const bool substituted = c.algo == kGraphAlgo && !p.untried[k].empty() &&
                             p.untried[k].front().algo != kGraphAlgo && !graph_plan_here(p, k);
    if (substituted) c = p.untried[k].front();
    void* ws = c.workspace ? workspace(c.workspace) : nullptr;
    const bool clock = clocked(p);  // no waits inside choose_narrow's timing
    if (clock) pass_clock_start(1);
    const bool inject = test_refuse_ && !p.test_refused[k] && !timing(p);
    if (inject) p.test_refused[k] = true;
    const cudnnStatus_t st = inject ? CUDNN_STATUS_BAD_PARAM : conv_pass_call(p, k, c.algo, x, w, y, ws, c.workspace);
    if (st == CUDNN_STATUS_SUCCESS) {
      if (clock) pass_clock_stop(p, k, 1);
      return;
    }
    // A substituted legacy algorithm refused here is not tried again: the next one then replaces
    // the engine on every lane, as any refusal (a rare second failure).
    if (substituted && refused_before_launch(int(st))) p.untried[k].erase(p.untried[k].begin());
    if (!refused_before_launch(int(st)) || p.untried[k].empty())
      throw Error(std::string("cuDNN error in ") +
                  (c.algo == kGraphAlgo ? std::string("cudnnBackendExecute (graph engine ") +
                                              std::to_string(c.engine) + " for " + calls[k] + ")"
                                        : std::string(calls[k])) +
                  ": " + cudnnGetErrorString(st) +
                  (refused_before_launch(int(st)) ? " (no other algorithm left to try)" : ""));
    const ConvChoice next = p.untried[k].front();
    p.untried[k].erase(p.untried[k].begin());
    const auto choice = [](const ConvChoice& e) {
      if (e.algo == kGraphAlgo) return "graph engine " + std::to_string(e.engine);
      return std::to_string(e.algo) + " (math " + std::to_string(e.math) + ", " +
             (e.timed ? "cudnnFind" : "heuristic") + ")";
    };
    conv_note(p.desc, std::string(kPassNames[k]) + " algorithm " + choice(c) + " refused: " + cudnnGetErrorString(st) +
                          "; trying " + choice(next));
    cudaGetLastError();  // a refusal leaves nothing for the next check to misreport
    adopt_choice(p, k, next);
  }
}

}  // namespace ds::model
