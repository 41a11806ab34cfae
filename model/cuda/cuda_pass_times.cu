// DOWNSCALE_CUDA_PASS_TIMES=1: CUDA events around each convolution pass (whole) and its library
// call, read when the backend ends, and the per-plan table on stderr (docs/gpu.md, per-pass times).
#include <cstdio>
#include <set>
#include <string>
#include <tuple>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"

namespace ds::model {

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
      // A 16-bit run's TF32 passes (cuda_conv_tf32.cu) are their TF32 plan's: said on the line.
      const int plan_mode = std::get<12>(key);
      const std::string as = plan_mode != int(math_) ? std::string("  [") + modes[plan_mode] + " pass]" : "";
      std::fprintf(stderr, "  conv %s -> %d, %dx%d, %-15s %6lld calls  whole %8.3f  conv %8.3f  %s%s\n",
                   p.desc.in.str().c_str(), p.desc.out_c, p.desc.kh, p.desc.kw, kPassNames[k],
                   static_cast<long long>(p.timed_calls[k]), p.whole_ms[k] / n, p.library_ms[k] / n,
                   narrow ? "narrow kernels"
                   : gemm ? "im2col + cuBLAS"
                   : p.use[k].algo == kGraphAlgo
                       ? ("graph engine " + std::to_string(p.use[k].engine) + " ws " +
                          std::to_string(p.use[k].workspace >> 20) + " MiB (timed)").c_str()
                          : ("algo " + std::to_string(p.use[k].algo) + " math " + std::to_string(p.use[k].math) +
                             " ws " + std::to_string(p.use[k].workspace >> 20) + " MiB" +
                             (p.use[k].timed ? " (cudnnFind)" : " (heuristic)")).c_str(),
                   as.c_str());
      whole += p.whole_ms[k];
      library += narrow || gemm ? p.whole_ms[k] : p.library_ms[k];
    }
  }
  if (any)
    std::fprintf(stderr, "cuda pass times: all convolution passes %.3f ms, of which %.3f ms (%.1f %%) outside the "
                         "convolution calls\n", whole, whole - library, whole > 0 ? 100.0 * (whole - library) / whole : 0.0);
}

}  // namespace ds::model
