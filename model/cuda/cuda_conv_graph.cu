// cuDNN's graph (backend) API for a convolution plan's three passes, beside the legacy algorithms
// that cudnnFind* ranks (cuda_conv_plan.cu). Why: the legacy API reaches only the legacy
// algorithms. On an H200 (2026-11-29) our BF16 NHWC passes for MNN took 18.1 ms a step, every one
// on legacy algorithm 0 or 1, where PyTorch's, through the graph API, took 15.3 (2026-11-28,
// bench/conv_layouts.py): the 75 -> 100 5x5 backward data 1.13 ms against 0.44, the 50 -> 25
// branch weight gradients 0.41-0.52 against 0.08-0.21.
//
// How, per pass: an operation graph of the one convolution over the plan's operands (x, w, y in
// the plan's data type and layout, unique ids 1, 2, 3; the pass writes one of them), the engine
// configurations of cuDNN's heuristic A and of its fallback list, each finalized into an
// execution plan. Those that finalize, fit the workspace cudnnFind* was offered, and need no
// runtime compilation (seconds each) nor down-convert inputs or reduce in 16 bits (numerical
// notes; DOWNSCALE_CUDA_GRAPH_NOTES=pytorch allows the 16-bit reductions, as PyTorch does) are timed on the zeroed scratch cudnnFind* ran on (PlanScratch), and so is the legacy
// algorithm the plan chose: every engine once, the three fastest again on three runs, the legacy
// algorithm on three. DOWNSCALE_CUDA_GRAPH=timed keeps the fastest engine where it takes under
// 97 % of the legacy algorithm's time (clearly_faster), =1 wherever one runs (the tests), unset or 0 never (the default until this has run
// on a GPU). The legacy choice goes first in the pass's untried list (unless it failed on the
// scratch), so an engine refused at call time falls back to it with one stderr line (run_conv_pass).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/graph_strides.h"

namespace ds::model {

namespace {

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;  // every graph's and variant pack's operands
// The byte alignment the plans are built for (engines may load 16 bytes at a time). The 16-bit
// operands are the backend's own blocks (the caching allocator's, 256-byte aligned);
// graph_execute refuses any other, and the pass falls back to its legacy algorithm.
constexpr int64_t kAlign = 16;
// At most this many engine configurations are timed per pass (and at most kMaxListed tried:
// finalize may refuse many), heuristic A's ranking first: a plan's choice costs milliseconds,
// once. A configuration in both lists may be timed twice: start-up time only.
constexpr size_t kMaxCandidates = 24;
constexpr int kMaxListed = 96;
// How many of the candidates fastest on one run are timed again on three (choose_graph_engines).
constexpr size_t kFinalists = 3;

void check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS) throw Error(std::string(what) + ": " + cudnnGetErrorString(st));
}

// One backend descriptor, destroyed with its owner unless released.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type, const char* what) {
    check(cudnnBackendCreateDescriptor(type, &d_), what);
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  Desc& operator=(Desc&&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t release() {
    cudnnBackendDescriptor_t d = d_;
    d_ = nullptr;
    return d;
  }
  void set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n, const void* v, const char* what) {
    check(cudnnBackendSetAttribute(d_, a, t, n, v), what);
  }
  void set(cudnnBackendAttributeName_t a, const Desc& v, const char* what) {
    const cudnnBackendDescriptor_t raw = v.get();
    set(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
  }
  void finalize(const char* what) { check(cudnnBackendFinalize(d_), what); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// An operand of the plan's data type in its layout (graph_strides.h), 16-byte aligned.
Desc tensor(int64_t uid, const std::array<int64_t, 4>& dims, cudnnDataType_t dt, bool nhwc) {
  const std::array<int64_t, 4> strides = graph_strides(dims, nhwc);
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor descriptor");
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), "tensor dimensions");
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), "tensor strides");
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor unique id");
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlign, "tensor alignment");
  t.finalize("tensor finalize");
  return t;
}

// Cross-correlation (as cudnnSetConvolution2dDescriptor's CUDNN_CROSS_CORRELATION), FP32 sums.
Desc convolution(int pad_h, int pad_w, int stride) {
  const int64_t dims = 2, dilation[2] = {1, 1}, strides[2] = {stride, stride}, pad[2] = {pad_h, pad_w};
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  Desc c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution descriptor");
  c.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, "convolution spatial dims");
  c.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "convolution compute type");
  c.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "convolution mode");
  c.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation, "convolution dilations");
  c.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides, "convolution strides");
  c.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "convolution pre-paddings");
  c.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "convolution post-paddings");
  c.finalize("convolution finalize");
  return c;
}

// Pass k's operation: y = conv(x, w) forward, x = its data gradient from y, w = its filter
// gradient from x and y; alpha 1, beta 0, as every legacy call of the backend.
Desc operation(int k, const Desc& x, const Desc& w, const Desc& y, const Desc& conv) {
  struct Names {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static const Names names[3] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
  };
  const Names& n = names[k];
  const float alpha = 1.0f, beta = 0.0f;
  Desc op(n.type, "convolution operation");
  op.set(n.x, x, "operation x");
  op.set(n.w, w, "operation w");
  op.set(n.y, y, "operation y");
  op.set(n.conv, conv, "operation convolution");
  op.set(n.alpha, CUDNN_TYPE_FLOAT, 1, &alpha, "operation alpha");
  op.set(n.beta, CUDNN_TYPE_FLOAT, 1, &beta, "operation beta");
  op.finalize("operation finalize");
  return op;
}

Desc operation_graph(const Desc& op, cudnnHandle_t handle) {
  Desc g(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  g.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, op, "operation graph ops");
  g.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "operation graph handle");
  g.finalize("operation graph finalize");
  return g;
}

// An execution plan of engine configuration `config` for `handle`, its attributes set, not yet
// finalized (the caller says what a refusal means), and a finalized plan's workspace in bytes.
Desc execution_plan(cudnnBackendDescriptor_t config, cudnnHandle_t handle) {
  Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
  plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config, "plan configuration");
  plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle");
  return plan;
}

int64_t plan_workspace(const Desc& plan) {
  int64_t bytes = 0, n = 0;
  check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &bytes),
        "plan workspace");
  return bytes;
}

// The engine configurations cuDNN's heuristic `mode` lists for the graph, in its order.
std::vector<Desc> engine_configs(const Desc& graph, cudnnBackendHeurMode_t mode) {
  Desc h(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristic");
  h.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristic graph");
  h.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristic mode");
  h.finalize("heuristic finalize");
  int64_t count = 0;
  check(cudnnBackendGetAttribute(h.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                 nullptr),
        "heuristic result count");
  std::vector<Desc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration");
    raw.push_back(configs.back().get());
  }
  int64_t got = 0;
  if (count > 0)
    check(cudnnBackendGetAttribute(h.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                   raw.data()),
          "heuristic results");
  while (int64_t(configs.size()) > got) configs.pop_back();
  return configs;
}

// A configuration's engine: its global index, and whether the notes allow it here.
struct EngineInfo {
  int64_t index = -1;
  bool usable = false;
};
EngineInfo engine_info(const Desc& config, bool transforms, bool reduced_precision) {
  Desc e(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
  cudnnBackendDescriptor_t raw = e.get();
  int64_t n = 0;
  check(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw),
        "configuration engine");
  EngineInfo info;
  check(cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &info.index),
        "engine index");
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  check(cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes),
        "engine numerical notes");
  info.usable = true;
  for (int64_t i = 0; i < n; ++i) {
    const cudnnBackendNumericalNote_t note = notes[i];
    // 16-bit inputs are the operands as given (no further rounding: never an engine that
    // down-converts them, as PyTorch's cuDNN v8 path drops those for every dtype) and the sums
    // FP32, as in the legacy algorithms the parity tests pin, unless reduced_precision
    // (DOWNSCALE_CUDA_GRAPH_NOTES=pytorch: PyTorch keeps the engines that reduce in 16 bits);
    // DOWNSCALE_CUDA_TRANSFORMS=0 drops FFT and Winograd here too.
    if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
        (note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION && !reduced_precision) ||
        (!transforms && (note == CUDNN_NUMERICAL_NOTE_FFT || note == CUDNN_NUMERICAL_NOTE_WINOGRAD ||
                         note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 ||
                         note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6 ||
                         note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13)))
      info.usable = false;
  }
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  check(cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, behavior),
        "engine behavior notes");
  for (int64_t i = 0; i < n; ++i)
    if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) info.usable = false;
  return info;
}

// An execution plan and the engine configuration it was made from, kept alive with it (as
// cudnn-frontend's ExecutionPlan keeps its configuration; the graph and its operation need not
// outlive a finalized plan, as in PyTorch's plan cache).
struct Candidate {
  cudnnBackendDescriptor_t plan = nullptr, config = nullptr;  // owned by the Candidates list below
  int64_t workspace = 0, engine = -1;
};

// The execution plans a chooser may time, owned until it keeps one.
struct Candidates {
  std::vector<Candidate> list;
  ~Candidates() {
    for (Candidate& c : list)
      for (cudnnBackendDescriptor_t d : {c.plan, c.config})
        if (d) cudnnBackendDestroyDescriptor(d);
  }
};

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % uintptr_t(kAlign) == 0; }

}  // namespace

cudnnStatus_t CudaBackend::graph_execute(cudnnBackendDescriptor_t plan, const void* x, const void* w, const void* y,
                                         void* ws) {
  if (!plan) return CUDNN_STATUS_BAD_PARAM;
  if (!aligned(x) || !aligned(w) || !aligned(y)) return CUDNN_STATUS_NOT_SUPPORTED;
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (st != CUDNN_STATUS_SUCCESS) return st;
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* data[3] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(pack);
  if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendExecute(cudnn_, plan, pack);
  cudnnBackendDestroyDescriptor(pack);
  return st;
}

cudnnBackendDescriptor_t CudaBackend::graph_plan_here(const ConvPlan& p, int k) {
  if (!p.graph[k] || p.graph_handle[k] == cudnn_) return p.graph[k];
  for (const auto& [handle, plan] : p.graph_other[k])
    if (handle == cudnn_) return plan;
  // First run of this pass under this handle: the kept engine configuration made a plan again,
  // here, refused unless it finalizes and fits the workspace the pass was given.
  cudnnBackendDescriptor_t made = nullptr;
  std::string why;
  try {
    Desc plan = execution_plan(p.graph_config[k], cudnn_);
    plan.finalize("plan for this lane's handle");
    const int64_t bytes = plan_workspace(plan);
    if (bytes < 0 || size_t(bytes) > p.use[k].workspace)
      why = "it asks " + std::to_string(bytes) + " bytes of workspace, not " + std::to_string(p.use[k].workspace);
    else
      made = plan.release();
  } catch (const Error& e) {
    cudaGetLastError();
    why = e.what();
  }
  if (!made)
    conv_note(p.desc, std::string(kPassNames[k]) + ": graph engine " + std::to_string(p.use[k].engine) +
                          " not made for another lane's cuDNN handle (" + why +
                          "); the legacy algorithm it replaced runs on that lane");
  p.graph_other[k].emplace_back(cudnn_, made);
  return made;
}

void CudaBackend::choose_graph_engines(const ConvDesc& d, ConvPlan& p, const PlanScratch& s) {
  if (graph_mode_ == 0 || !half16()) return;
  const Shape out = d.out();
  const cudnnDataType_t dt = math_ == MathMode::kBf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const Shape x16 = p.x16_shape();  // with the padded channels, as the legacy descriptors
  const std::array<int64_t, 4> xd{x16.n, x16.c, x16.h, x16.w}, wd{d.out_c, x16.c, d.kh, d.kw},
      yd{out.n, out.c, out.h, out.w};
  // The padding cuDNN sees: none when the plan pads x itself (explicit_pad, uneven padding).
  const int pad_h = p.explicit_pad ? 0 : d.pad_top, pad_w = p.explicit_pad ? 0 : d.pad_left;
  float *x = s.x, *w = s.w, *y = s.y;
  void* ws = s.ws;
  const size_t ws_bytes = s.ws_bytes;
  // Pass k's legacy algorithm on the scratch as the engines are timed (a warm-up and three runs):
  // {ms, failed}. Not timed (its workspace is beyond the scratch) is not failed: timed mode then
  // keeps it, not knowing the engine to be faster; failed on the scratch, the engine takes its place.
  const auto time_legacy = [&](int k) -> std::pair<float, bool> {
    const ConvChoice legacy = p.use[k];
    if (legacy.workspace > ws_bytes) return {-1.0f, false};
    try {
      return {time_runs(
                  [&] {
                    const cudnnStatus_t st =
                        conv_pass_call(p, k, legacy.algo, x, w, y, legacy.workspace ? ws : nullptr, legacy.workspace);
                    check(st, "legacy algorithm");
                  },
                  3),
              false};
    } catch (const Error&) {
      cudaGetLastError();
      return {-1.0f, true};
    }
  };
  for (int k = 0; k < 3; ++k) {
    // chosen_ms[k] from here on: this step's own timing of the way the pass will run (an engine's,
    // or the legacy algorithm's as the engines were timed), or -1, never cudnnFind's figure: two
    // plans compared on it (DOWNSCALE_CUDA_PAD_CHANNELS=timed) then compare like with like.
    p.chosen_ms[k] = -1;
    try {
      Desc xt = tensor(kUidX, xd, dt, nhwc_), wt = tensor(kUidW, wd, dt, nhwc_), yt = tensor(kUidY, yd, dt, nhwc_);
      Desc conv = convolution(pad_h, pad_w, d.stride);
      Desc op = operation(k, xt, wt, yt, conv);
      Desc graph = operation_graph(op, cudnn_);
      Candidates cands;
      int listed = 0, skipped = 0;
      std::string heuristic_errors;  // a list cuDNN refused: the other may still have engines
      for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
        std::vector<Desc> configs;
        try {
          configs = engine_configs(graph, mode);
        } catch (const Error& e) {
          cudaGetLastError();
          heuristic_errors += std::string("; ") + (mode == CUDNN_HEUR_MODE_A ? "heuristic A" : "fallback list") +
                              " refused: " + e.what();
        }
        for (Desc& config : configs) {
          // Both bounds: plans timed (start-up time), configurations tried (finalize may refuse many).
          if (cands.list.size() >= kMaxCandidates || listed >= kMaxListed) break;
          ++listed;
          EngineInfo info;
          try {
            info = engine_info(config, transforms_, graph_reduced_precision_);
          } catch (const Error&) {  // notes not readable: this configuration left out, not the pass
            cudaGetLastError();
            ++skipped;
            continue;
          }
          // Not deduplicated by engine: one engine comes with several knob settings (tiles,
          // splits), each its own configuration, and the fastest may be any of them.
          if (!info.usable) {
            ++skipped;
            continue;
          }
          Desc plan = execution_plan(config.get(), cudnn_);
          if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) {  // not for this graph
            ++skipped;
            continue;
          }
          const int64_t bytes = plan_workspace(plan);
          if (bytes < 0 || size_t(bytes) > ws_bytes) {
            ++skipped;
            continue;
          }
          cands.list.push_back(Candidate{plan.release(), config.release(), bytes, info.index});
        }
      }
      cudaGetLastError();
      // On the scratch, in two rounds, so that engines far slower than the best (the fallback
      // list's may be 10-100x) cost two runs each, not four, at start-up: every candidate a
      // warm-up and one run; then the kFinalists fastest again, a warm-up and three runs each;
      // then the legacy algorithm the same way. The engine kept is the finalists' fastest on its
      // second timing, and under =timed only where clearly_faster (conv_choices.h).
      const auto run_of = [&](const Candidate& c) {
        return [&] { check(graph_execute(c.plan, x, w, y, c.workspace ? ws : nullptr), "graph execute"); };
      };
      std::vector<std::pair<float, size_t>> first;  // {ms, candidate}
      for (size_t i = 0; i < cands.list.size(); ++i) {
        try {
          first.emplace_back(time_runs(run_of(cands.list[i]), 1), i);
        } catch (const Error&) {
          cudaGetLastError();
        }
      }
      std::sort(first.begin(), first.end());
      int best = -1;
      float best_ms = -1;
      for (size_t f = 0; f < first.size() && f < kFinalists; ++f) {
        try {
          const float ms = time_runs(run_of(cands.list[first[f].second]), 3);
          if (best < 0 || ms < best_ms) best = int(first[f].second), best_ms = ms;
        } catch (const Error&) {
          cudaGetLastError();
        }
      }
      const ConvChoice legacy = p.use[k];
      const auto [legacy_ms, legacy_failed] = time_legacy(k);
      char times[192];
      std::snprintf(times, sizeof times,
                    " (ms graph/legacy %.3f/%.3f; %zu engines timed of %d listed, %d left out, %zu timed again)",
                    best_ms, legacy_ms, cands.list.size(), listed, skipped, std::min(first.size(), kFinalists));
      const std::string said = times + heuristic_errors;
      if (best >= 0 && (graph_mode_ == 1 || legacy_failed || clearly_faster(best_ms, legacy_ms))) {
        Candidate& c = cands.list[size_t(best)];
        // Owned by the plan from here (ConvPlan's destructor), so not by the candidates' list.
        p.graph[k] = c.plan;
        p.graph_config[k] = c.config;
        c.plan = c.config = nullptr;
        p.graph_handle[k] = cudnn_;
        // What the configuration was made from stays alive with it (ConvPlan::graph_made_from).
        for (Desc* made_from : {&graph, &op, &conv, &xt, &wt, &yt}) p.graph_made_from[k].push_back(made_from->release());
        if (!legacy_failed) {
          p.untried[k].insert(p.untried[k].begin(), legacy);
        } else if (!p.untried[k].empty() && p.untried[k].front().algo != kGraphAlgo) {
          // The legacy algorithm failed on this very geometry: it is no substitute for a lane
          // whose handle cannot have the engine (run_conv_pass). The next in line is, under its
          // own math type and workspace, which adopt_choice sets on the pass's descriptor (the
          // engine does not read it).
          adopt_choice(p, k, p.untried[k].front());
          p.untried[k].front() = p.use[k];
        }
        p.use[k] = ConvChoice{kGraphAlgo, 0, size_t(c.workspace), true, int(c.engine)};
        p.chosen_ms[k] = best_ms;
        plan_note(p, d, std::string(kPassNames[k]) + " by cuDNN graph engine " + std::to_string(c.engine) + said);
      } else {
        p.chosen_ms[k] = legacy_failed ? -1 : legacy_ms;  // -1 too when not timed (workspace)
        plan_note(p, d, std::string(kPassNames[k]) + " stays on legacy algorithm " + std::to_string(legacy.algo) +
                            said);
      }
    } catch (const Error& e) {
      cudaGetLastError();
      // No engine for this graph (a plan's unaligned channels, say): the legacy algorithm stays,
      // timed as it would have been beside the engines where two plans are to be compared.
      if (pad_channels_ == -1) {
        const auto [legacy_ms, legacy_failed] = time_legacy(k);
        p.chosen_ms[k] = legacy_failed ? -1 : legacy_ms;
      }
      plan_note(p, d, std::string("graph API not used for the ") + kPassNames[k] + ": " + e.what());
    }
  }
}

}  // namespace ds::model
