// The candidate algorithms of one convolution pass, in the order the CUDA backend tries them, and
// which cuDNN failures let it try the next one. Plain C++ (no cuDNN types: algorithms, math types
// and statuses as ints) so the CPU tests check the ordering (tests/model/conv_choices_test.cpp);
// model/cuda/cuda_conv_plan.cu fills and uses the lists.
//
// Why a list rather than one choice: cudnnFind* ranks (algorithm, math type) pairs on scratch
// tensors, and an entry it reports as successful can still be refused when training calls it
// (on an H100, cuDNN 9.19: CUDNN_STATUS_BAD_PARAM for a BF16 9x9 forward at batch 4 with the
// algorithm Find chose). A refusal is a parameter check before any kernel is queued, so the next
// candidate can run the same call; the plan then keeps it for good.
#pragma once
#include <cstddef>
#include <vector>

namespace ds::model {

// algo kGraphAlgo: an execution plan of cuDNN's graph API (the plan's graph[pass], engine its
// global index) instead of a legacy algorithm: model/cuda/cuda_conv_graph.cu.
constexpr int kGraphAlgo = -1;

struct ConvChoice {
  int algo = 0;       // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, or kGraphAlgo
  int math = 0;       // cudnnMathType_t the entry was ranked with
  size_t workspace = 0;
  bool timed = false;  // from cudnnFind* (else cuDNN's heuristic)
  int engine = -1;     // kGraphAlgo: the graph API engine's global index
  float ms = -1;       // cudnnFind*'s time for it (ms; negative when not timed)
};

// cudnnFind*'s usable entries first (fastest first), then the heuristic's usable entries that
// Find did not list with the same math type, in the heuristic's order: the timed choice when
// there is one, cuDNN's recommendation as the fallback.
// forced_math >= 0 (FP32 mode: CUDNN_FMA_MATH, which adopt_choice runs every entry under): each
// entry takes that math type before the comparison, so an algorithm the heuristic ranked under a
// tensor-core math type is not tried a second time under FMA after Find's FMA entry of it was
// refused, and the stderr line names the math type that really runs.
inline std::vector<ConvChoice> merge_choices(const std::vector<ConvChoice>& found,
                                             const std::vector<ConvChoice>& heuristic, int forced_math = -1) {
  std::vector<ConvChoice> all;
  for (const auto& list : {found, heuristic})
    for (ConvChoice c : list) {
      if (forced_math >= 0) c.math = forced_math;
      bool seen = false;
      for (const ConvChoice& a : all) seen = seen || (a.algo == c.algo && a.math == c.math);
      if (!seen) all.push_back(c);
    }
  return all;
}

// DOWNSCALE_CUDA_PAD_CHANNELS=timed: whether a plan runs on the descriptors with its input
// channels padded to 8, from the time of the way each pass will run (forward, backward data,
// backward filter; ms: cudnnFind*'s, or the graph-engine step's own runs where that is on) on
// both descriptors and the copies padding adds a step beside them
// (extra_ms: a 16-bit activation that cuDNN would otherwise read where it lies is copied into
// the padded layout before the forward and the backward filter pass). Padded only when all six
// times are known and the padded passes with the copies take less than 97 % of the plain ones:
// when in doubt, the layer keeps the operands it was written for. The margin: each time is one
// timing at start-up, and a layer within a few percent either way would otherwise change its
// operands, and with them its algorithms and last bits, from run to run; the layers padding is
// for (MNN's polyphase 100 -> 528, 6.3 ms of an 18.6 ms step) are expected to gain far more.
constexpr float kPaddingMargin = 0.97f;
inline bool padding_pays(const float plain[3], const float padded[3], float extra_ms) {
  float a = 0, b = extra_ms;
  for (int k = 0; k < 3; ++k) {
    if (!(plain[k] >= 0) || !(padded[k] >= 0)) return false;  // untimed (negative) or NaN
    a += plain[k];
    b += padded[k];
  }
  return extra_ms >= 0 && b < kPaddingMargin * a;
}

// Whether a timed alternative replaces the way a pass runs now, from each one's own time on the
// same operands (ms; negative: not timed): only below 97 % of it, as padding (kPaddingMargin, the
// same reason). Used for DOWNSCALE_CUDA_GRAPH=timed (an engine against the legacy algorithm, where
// the best of up to 24 engines' timings is biased low besides) and DOWNSCALE_CUDA_TF32_PASSES=timed
// (a backward pass as TF32 against its 16-bit kernels): a pass within a few percent either way
// would otherwise change its kernel, and its last bits, from run to run.
inline bool clearly_faster(float new_ms, float now_ms) {
  return new_ms >= 0 && now_ms >= 0 && new_ms < kPaddingMargin * now_ms;
}

// cuDNN 9 statuses by category (cudnn_graph.h: 2000-2999 BAD_PARAM*, 3000-3999 NOT_SUPPORTED*):
// the call was refused while checking its arguments, before anything ran on the stream, so
// nothing is half-written and another algorithm may be tried. Everything else (execution
// failures, allocation failures, internal errors) is final. NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER
// and _CUDART (3005, 3006) are final too: no algorithm runs on that installation.
inline bool refused_before_launch(int status) {
  if (status == 3005 || status == 3006) return false;
  return status / 1000 == 2 || status / 1000 == 3;
}

}  // namespace ds::model
