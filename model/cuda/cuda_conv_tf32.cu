// The 16-bit modes' TF32 passes: a convolution's backward data or backward filter pass run as
// train.precision tf32 runs it (FP32 NCHW operands, the TF32 plan of the same geometry, TF32 tensor
// cores), instead of on 16-bit operands, where that is faster. DOWNSCALE_CUDA_TF32_PASSES: 0
// never, 1 wherever it applies (tests), "timed" by timing both ways once per plan and pass on the
// first call's own tensors (time_two_ways); unset, timed under bf16 (measured on an H200,
// 2026-11-30: the BF16 step 1964 samples/s with it against 1797) and never under fp16.
//
// Why: on an H200 (cuDNN 9.19, 2026-11-29, docs/gpu_runs/2026-11-29_call1_8cafde9_nhwc_act16.md)
// the legacy API's BF16 NHWC kernels lost to its TF32 ones on exactly these passes of MNN: the
// 50 -> 25 branch weight gradients 0.38-0.47 ms against 0.09-0.14 in TF32, the 20 -> 50 7x7 and
// 9x9 ones 0.33-0.37 against 0.15, the 75 -> 100 and 100 -> 528 polyphase backward data 1.06 and
// 2.63 against 0.60 and 2.18: about 2.6 ms of an 18.6 ms BF16 step, while BF16 wins the forward
// passes and the decoder's weight gradients. cudnnFind* ranks only the algorithms of one data
// type, so no legacy choice can see it.
//
// What each pass needs is already there: the backward passes take the output gradient in FP32
// NCHW (conv2d_backward's masked copy, the polyphase de-interleave's dys) beside its 16-bit copy,
// the FP32 master weights, and write FP32 NCHW dx and dw; only a 16-bit activation input (d.x16)
// is widened into an FP32 NCHW copy for the weight gradient (exact). A TF32 pass is more
// accurate than a BF16 one (10-bit against 7-bit mantissas, FP32 sums in both) and about as
// accurate as an FP16 one (10 bits both; TF32 tensor cores may truncate rather than round), so
// BF16's tolerances hold whichever way a plan goes and FP16's become TF32's (1e-2 of the scale in
// the tests, against 2e-3); as with cudnnFind's choices, the way may differ between runs, and
// with it the last bits.
#include <cstdio>
#include <string>

#include "model/cuda/cuda_backend.h"

namespace ds::model {

namespace {
// The pass's geometry on FP32 NCHW operands: the TF32 plan's key (conv_key refuses a 16-bit
// activation outside a 16-bit mode, so a forgotten flag cannot be misread).
ConvDesc fp32_operands(ConvDesc d) {
  d.x16 = d.y16 = false;
  return d;
}
}  // namespace

// math_ as train.precision tf32 for the scope's life, whatever ends it: the plan key, the plan's
// descriptors and Find, the weight-gradient GEMM's compute type and every half16() test read it.
// One host thread issues all of the backend's work, so nothing else sees the switch.
struct CudaBackend::Tf32Scope {
  CudaBackend& b;
  MathMode saved;
  explicit Tf32Scope(CudaBackend& be) : b(be), saved(be.math_) { b.math_ = MathMode::kTf32; }
  ~Tf32Scope() { b.math_ = saved; }
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;
};

void CudaBackend::tf32_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) {
  const Tf32Scope tf32(*this);
  conv_backward_data_pass(fp32_operands(d), dy, nullptr, w, dx);
}

void CudaBackend::tf32_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db,
                                        bool timing) {
  float* x32 = nullptr;
  if (d.x16 && d.in.size() > 0) {  // widened in the 16-bit activations' layout, before the switch
    x32 = allocate(d.in.size());
    try {
      from_half16(d.in, x, x32);
    } catch (...) {
      release(x32);
      throw;
    }
  }
  // Timed inside a lane region, straight back to the cache (as gemm_backward_weights does): held
  // until the join, every timed run would pay a fresh cudaMalloc between its events. Only this
  // lane's stream is busy then and what reuses the block is queued after this; a failure skips
  // the timing's event wait, so then wait here for what this call queued. In training a lane's
  // release is held until the join like any other: for MNN at batch 32 the widened inputs of a
  // branch's second and third convolutions, 10 and 5 MB, 76 MB over the five branches a step.
  const auto give_back = [&](bool failed) {
    if (!x32) return;
    if (timing && concurrent()) {
      if (failed) cudaStreamSynchronize(stream_);
      cache_.release_now(x32);
    } else {
      release(x32);  // reused only by work queued after this
    }
  };
  try {
    const Tf32Scope tf32(*this);
    conv_backward_weights_pass(fp32_operands(d), x32 ? x32 : x, dy, nullptr, dw, db);
  } catch (...) {
    give_back(true);
    throw;
  }
  give_back(false);
}

bool CudaBackend::tf32_instead(const ConvDesc& d, ConvPlan& p, int k, const std::function<void()>& as_tf32,
                               const std::function<void()>& in16) {
  if (tf32_passes_mode_ == 0 || !half16() || p.timing_paths) return false;
  if (k == kDataPass ? p.narrow_bwd_data : p.narrow_bwd_weights) return false;  // FP32 kernels already
  if (!p.tf32_chosen[k]) choose_tf32_pass(d, p, k, as_tf32, in16);
  if (!p.tf32_pass[k]) return false;
  if (tf32_passes_mode_ == 1) {  // forced (the tests): a failure is theirs to see
    as_tf32();
    return true;
  }
  // Chosen by timing: a later failure (out of memory for the widened x or the TF32 plan's
  // workspace, a refusal with no candidate left) turns the pass back to 16 bits for good, with
  // one line, as gemm_weights_or_fall_back does; the 16-bit pass then writes all of dx or dw, db.
  try {
    as_tf32();
    return true;
  } catch (const Error& e) {
    cudaGetLastError();
    p.tf32_pass[k] = false;
    conv_note(d, std::string(kPassNames[k]) + " as TF32 failed (" + e.what() + "); 16 bits from now on");
    return false;
  }
}

void CudaBackend::choose_tf32_pass(const ConvDesc& d, ConvPlan& p, int k, const std::function<void()>& as_tf32,
                                   const std::function<void()>& in16) {
  p.tf32_chosen[k] = true;
  if (tf32_passes_mode_ == 1) {
    p.tf32_pass[k] = true;
    conv_note(d, std::string(kPassNames[k]) + " as TF32 (DOWNSCALE_CUDA_TF32_PASSES=1)");
    return;
  }
  // Either failing keeps the 16-bit pass (time_two_ways gives it -1); the chosen way then runs
  // the call again (tf32_instead). The TF32 plan is made in the TF32 run's warm-up, before its
  // clock starts; time_two_ways keeps its pass clocks off while timing.
  const auto [half16_ms, tf32_ms] = time_two_ways(p, in16, as_tf32);
  p.half16_ms[k] = half16_ms;
  p.tf32_ms[k] = tf32_ms;
  p.tf32_pass[k] = clearly_faster(tf32_ms, half16_ms);  // by more than the 3 % margin
  char times[96];
  std::snprintf(times, sizeof times, " (ms tf32/16-bit %.3f/%.3f)", tf32_ms, half16_ms);
  conv_note(d, std::string(kPassNames[k]) + (p.tf32_pass[k] ? " as TF32" : " in 16 bits") + times);
}

}  // namespace ds::model
