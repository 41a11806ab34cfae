// DnnlBackend: memory, and the ops that run as oneDNN primitives (convolution, ReLU, nearest
// resampling). The elementwise loops are in cpu_loops.cpp.
//
// Layout: every tensor stays in plain NCHW and every kernel in OIHW, so oneDNN reads and writes
// our buffers in place with no reorders. That is correctness first: oneDNN is fastest on its
// blocked layouts (nChw16c / OIhw16i16o, chosen with format_tag::any), and keeping activations
// blocked between layers is the next speed step for the CPU backend.
#include "model/cpu/dnnl_backend.h"

#include <cstdlib>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "io/error.h"

namespace ds::model {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {
memory::desc nchw(const Shape& s) { return memory::desc({s.n, s.c, s.h, s.w}, dt::f32, tag::nchw); }
// oneDNN takes const-less handles; the primitives only read the inputs we cast here.
void* mut(const float* p) { return const_cast<float*>(p); }
}  // namespace

struct DnnlBackend::ConvPrims {
  memory::desc src, wei, bias, dst;
  memory::dims strides, pad_l, pad_r;
  // The forward descriptor with bias is the hint for every backward primitive; the others are
  // built the first time they are needed (the first layer never needs backward-data).
  dnnl::convolution_forward::primitive_desc fwd_pd;
  std::unique_ptr<dnnl::convolution_forward> fwd, fwd_nobias;
  std::unique_ptr<dnnl::convolution_backward_data> bwd_data;
  std::unique_ptr<dnnl::convolution_backward_weights> bwd_w, bwd_w_nobias;
};

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

DnnlBackend::DnnlBackend(int threads) : threads_(threads), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
#ifdef _OPENMP
  // oneDNN in Debian uses the OpenMP runtime, so this sets its thread count as well as ours.
  if (threads > 0) omp_set_num_threads(threads);
#endif
}

DnnlBackend::~DnnlBackend() = default;

std::string DnnlBackend::name() const {
  int t = threads_;
#ifdef _OPENMP
  if (t <= 0) t = omp_get_max_threads();
#endif
  return "cpu (oneDNN, " + std::to_string(t) + " threads)";
}

// --- memory ---

float* DnnlBackend::allocate(int64_t n) {
  // 64-byte alignment: a cache line and an AVX-512 vector, which oneDNN's kernels prefer.
  const size_t bytes = ((size_t(n) * sizeof(float) + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (!p) throw Error("out of host memory allocating " + std::to_string(n) + " floats");
  return static_cast<float*>(p);
}

void DnnlBackend::release(float* p) { std::free(p); }

void DnnlBackend::copy_from_host(float* dst, const float* host, int64_t n) { std::memcpy(dst, host, size_t(n) * 4); }
void DnnlBackend::copy_to_host(float* host, const float* src, int64_t n) { std::memcpy(host, src, size_t(n) * 4); }
void DnnlBackend::copy(float* dst, const float* src, int64_t n) {
  if (dst != src) std::memcpy(dst, src, size_t(n) * 4);
}

void DnnlBackend::fill(float* p, int64_t n, float value) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

// --- convolution ---

DnnlBackend::ConvPrims& DnnlBackend::conv_prims(const ConvDesc& d) {
  ConvKey key{d.in.n, d.in.c, d.in.h, d.in.w, d.out_c, d.kh, d.kw, d.stride,
              d.pad_top, d.pad_bottom, d.pad_left, d.pad_right};
  auto it = conv_cache_.find(key);
  if (it != conv_cache_.end()) return *it->second;

  const Shape o = d.out();
  auto p = std::make_unique<ConvPrims>();
  p->src = nchw(d.in);
  p->dst = nchw(o);
  p->wei = memory::desc({d.out_c, d.in.c, d.kh, d.kw}, dt::f32, tag::oihw);
  p->bias = memory::desc({d.out_c}, dt::f32, tag::x);
  p->strides = {d.stride, d.stride};
  // Explicit per-side padding is what lets oneDNN do Keras' asymmetric 'same' directly.
  p->pad_l = {d.pad_top, d.pad_left};
  p->pad_r = {d.pad_bottom, d.pad_right};
  dnnl::convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, p->src, p->wei,
                                     p->bias, p->dst, p->strides, p->pad_l, p->pad_r);
  p->fwd_pd = dnnl::convolution_forward::primitive_desc(fd, engine_);
  auto& ref = *p;
  conv_cache_.emplace(key, std::move(p));
  return ref;
}

void DnnlBackend::conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  ConvPrims& p = conv_prims(d);
  memory src(p.src, engine_, mut(x)), wei(p.wei, engine_, mut(w)), dst(p.dst, engine_, y);
  if (b) {
    if (!p.fwd) p.fwd = std::make_unique<dnnl::convolution_forward>(p.fwd_pd);
    memory bias(p.bias, engine_, mut(b));
    p.fwd->execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
  } else {
    if (!p.fwd_nobias) {
      dnnl::convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, p.src, p.wei,
                                         p.dst, p.strides, p.pad_l, p.pad_r);
      p.fwd_nobias = std::make_unique<dnnl::convolution_forward>(dnnl::convolution_forward::primitive_desc(fd, engine_));
    }
    p.fwd_nobias->execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
  }
  stream_.wait();
}

void DnnlBackend::conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) {
  ConvPrims& p = conv_prims(d);
  if (!p.bwd_data) {
    dnnl::convolution_backward_data::desc bd(algorithm::convolution_direct, p.src, p.wei, p.dst, p.strides, p.pad_l,
                                             p.pad_r);
    p.bwd_data = std::make_unique<dnnl::convolution_backward_data>(
        dnnl::convolution_backward_data::primitive_desc(bd, engine_, p.fwd_pd));
  }
  memory ddst(p.dst, engine_, mut(dy)), wei(p.wei, engine_, mut(w)), dsrc(p.src, engine_, dx);
  p.bwd_data->execute(stream_, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dsrc}});
  stream_.wait();
}

void DnnlBackend::conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) {
  ConvPrims& p = conv_prims(d);
  memory src(p.src, engine_, mut(x)), ddst(p.dst, engine_, mut(dy)), dwei(p.wei, engine_, dw);
  if (db) {
    if (!p.bwd_w) {
      dnnl::convolution_backward_weights::desc wd(algorithm::convolution_direct, p.src, p.wei, p.bias, p.dst,
                                                  p.strides, p.pad_l, p.pad_r);
      p.bwd_w = std::make_unique<dnnl::convolution_backward_weights>(
          dnnl::convolution_backward_weights::primitive_desc(wd, engine_, p.fwd_pd));
    }
    memory dbias(p.bias, engine_, db);
    p.bwd_w->execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei},
                               {DNNL_ARG_DIFF_BIAS, dbias}});
  } else {
    if (!p.bwd_w_nobias) {
      dnnl::convolution_backward_weights::desc wd(algorithm::convolution_direct, p.src, p.wei, p.dst, p.strides,
                                                  p.pad_l, p.pad_r);
      p.bwd_w_nobias = std::make_unique<dnnl::convolution_backward_weights>(
          dnnl::convolution_backward_weights::primitive_desc(wd, engine_, p.fwd_pd));
    }
    p.bwd_w_nobias->execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei}});
  }
  stream_.wait();
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
