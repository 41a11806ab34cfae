// DnnlBackend: memory, and the ops that run as oneDNN primitives on our plain NCHW buffers (ReLU,
// nearest resampling: memory-bound, so layout does not matter to them). The convolutions, which
// run in oneDNN's blocked layouts, are in dnnl_conv.cpp and dnnl_upsample_conv.cpp; the
// elementwise loops in cpu_loops.cpp.
#include "model/cpu/dnnl_backend.h"
#include "model/cpu/host_memory.h"
#include "model/cpu/dnnl_util.h"

#include <sched.h>

#include <cstdlib>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "io/error.h"

namespace ds::model {

using dnnl_util::mut;
using dnnl_util::nchw;

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;


struct DnnlBackend::ReluPrims {
  dnnl::eltwise_forward::primitive_desc fwd_pd;
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
  memory::desc md;
};

struct DnnlBackend::ResamplePrims {
  memory::desc src, dst;
  dnnl::resampling_forward fwd;
  dnnl::resampling_backward bwd;
};

namespace {
// The CPUs this process may run on (a Slurm allocation or a taskset, not the whole node).
int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return 1;
}
}  // namespace

// threads <= 0 is every usable CPU, said explicitly: the OpenMP runtime's own default was seen to
// give one thread (bench_train_step --threads 0 ran MNN at 1 thread on a 16-core GPU node).
DnnlBackend::DnnlBackend(int threads)
    : threads_(threads > 0 ? threads : usable_cpus()), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
#ifdef _OPENMP
  // oneDNN in Debian uses the OpenMP runtime, so this sets its thread count as well as ours.
  omp_set_num_threads(threads_);
#endif
  // The ISA values are nested bit sets (as in cpu_has_bf16).
  const int isa = int(dnnl::get_effective_cpu_isa());
  const int avx512 = int(dnnl::cpu_isa::avx512_core), avx2 = int(dnnl::cpu_isa::avx2);
  block_ = (isa & avx512) == avx512 ? 16 : (isa & avx2) == avx2 ? 8 : 0;
  // DS_CONV_PLAIN_LAYOUTS=1 when a backend is made: its convolutions run on plain NCHW/OIHW, as
  // this backend did before (kept so the benchmark can show what the blocked layouts gain on a
  // given CPU, and so the tests can check both paths), and its activations stay NCHW between
  // layers, or those convolutions would mix blocked activations with plain weights.
  const char* plain = std::getenv("DS_CONV_PLAIN_LAYOUTS");
  plain_layouts_ = plain && std::strcmp(plain, "1") == 0;
  if (plain_layouts_) block_ = 0;
  (void)huge_pages_wanted();  // read now: a mistyped DOWNSCALE_HUGEPAGES stops the run here
}

DnnlBackend::~DnnlBackend() = default;

void DnnlBackend::expect_block(int block, const char* op) const {
  if (block != 0 && block != block_)
    throw Error(std::string("internal: ") + op + " got channel block " + std::to_string(block) +
                " on a cpu backend whose block is " + std::to_string(block_));
}

std::string DnnlBackend::name() const {
  int t = threads_;
#ifdef _OPENMP
  if (t <= 0) t = omp_get_max_threads();
#endif
  return "cpu (oneDNN, " + std::to_string(t) + (t == 1 ? " thread)" : " threads)");
}

bool DnnlBackend::cpu_has_bf16() {
  // The ISA values are nested bit sets: AMX includes every avx512_core_bf16 bit, AVX2-VNNI none.
  const int isa = int(dnnl::get_effective_cpu_isa()), bf16 = int(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

bool DnnlBackend::set_math(MathMode mode) {
  if (mode == MathMode::kBf16) {
    if (!cpu_has_bf16()) return false;
    bf16_ = true;
    return true;
  }
  if (mode == MathMode::kFp16) return false;  // keeps the current mode, as any refused request
  bf16_ = false;  // kTf32 and kFp32 both compute in FP32 here
  return false;
}

// --- memory ---

float* DnnlBackend::allocate(int64_t n) {
  void* p = host_allocate(size_t(n > 0 ? n : 0) * sizeof(float));  // model/cpu/host_memory.h
  if (!p) throw Error("out of host memory allocating " + std::to_string(n) + " floats");
  return static_cast<float*>(p);
}

void DnnlBackend::release(float* p) { host_free(p); }

void DnnlBackend::copy_from_host(float* dst, const float* host, int64_t n) { std::memcpy(dst, host, size_t(n) * 4); }
void DnnlBackend::copy_to_host(float* host, const float* src, int64_t n) { std::memcpy(host, src, size_t(n) * 4); }
void DnnlBackend::copy(float* dst, const float* src, int64_t n) {
  if (dst != src) std::memcpy(dst, src, size_t(n) * 4);
}

void DnnlBackend::fill(float* p, int64_t n, float value) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

// --- ReLU ---

DnnlBackend::ReluPrims& DnnlBackend::relu_prims(int64_t n) {
  auto it = relu_cache_.find(n);
  if (it != relu_cache_.end()) return *it->second;
  // A flat 1-D view: ReLU does not care about the shape, and this shares one primitive between
  // every layer of the same size.
  memory::desc md({n}, dt::f32, tag::a);
  dnnl::eltwise_forward::desc fd(prop_kind::forward_training, algorithm::eltwise_relu, md, 0.f, 0.f);
  dnnl::eltwise_forward::primitive_desc fpd(fd, engine_);
  dnnl::eltwise_backward::desc bd(algorithm::eltwise_relu, md, md, 0.f, 0.f);
  dnnl::eltwise_backward::primitive_desc bpd(bd, engine_, fpd);
  auto p = std::unique_ptr<ReluPrims>(new ReluPrims{fpd, dnnl::eltwise_forward(fpd), dnnl::eltwise_backward(bpd), md});
  auto& ref = *p;
  relu_cache_.emplace(n, std::move(p));
  return ref;
}

void DnnlBackend::relu_forward(int64_t n, const float* x, float* y) {
  if (n == 0) return;
  ReluPrims& p = relu_prims(n);
  memory src(p.md, engine_, mut(x)), dst(p.md, engine_, y);
  p.fwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  stream_.wait();
}

void DnnlBackend::relu_backward(int64_t n, const float* x, const float* dy, float* dx) {
  if (n == 0) return;
  ReluPrims& p = relu_prims(n);
  memory src(p.md, engine_, mut(x)), ddst(p.md, engine_, mut(dy)), dsrc(p.md, engine_, dx);
  p.bwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_SRC, dsrc}});
  stream_.wait();
}

// --- nearest upsampling ---

DnnlBackend::ResamplePrims& DnnlBackend::resample_prims(const Shape& in, int factor) {
  auto key = std::make_tuple(in.n, in.c, in.h, in.w, factor);
  auto it = resample_cache_.find(key);
  if (it != resample_cache_.end()) return *it->second;
  const Shape out{in.n, in.c, in.h * factor, in.w * factor};
  memory::desc src = nchw(in), dst = nchw(out);
  // oneDNN's nearest maps output o to input round((o + 0.5) / f - 0.5) (half rounded up), which
  // for an integer factor is floor(o / f): Keras' UpSampling2D 'nearest' (tested).
  dnnl::resampling_forward::desc fd(prop_kind::forward_training, algorithm::resampling_nearest, src, dst);
  dnnl::resampling_forward::primitive_desc fpd(fd, engine_);
  dnnl::resampling_backward::desc bd(algorithm::resampling_nearest, src, dst);
  dnnl::resampling_backward::primitive_desc bpd(bd, engine_, fpd);
  auto p = std::unique_ptr<ResamplePrims>(
      new ResamplePrims{src, dst, dnnl::resampling_forward(fpd), dnnl::resampling_backward(bpd)});
  auto& ref = *p;
  resample_cache_.emplace(key, std::move(p));
  return ref;
}

void DnnlBackend::upsample_nearest_forward(const Shape& in, int factor, const float* x, float* y) {
  ResamplePrims& p = resample_prims(in, factor);
  memory src(p.src, engine_, mut(x)), dst(p.dst, engine_, y);
  p.fwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  stream_.wait();
}

void DnnlBackend::upsample_nearest_backward(const Shape& in, int factor, const float* dy, float* dx) {
  ResamplePrims& p = resample_prims(in, factor);
  memory ddst(p.dst, engine_, mut(dy)), dsrc(p.src, engine_, dx);
  p.bwd.execute(stream_, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_SRC, dsrc}});
  stream_.wait();
}

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<DnnlBackend>(threads); }

}  // namespace ds::model
