// DnnlBackend's max and average pooling as oneDNN primitives, built once per geometry.
//
// oneDNN's max-pool backward needs the workspace (where each maximum was) that a forward_training
// run produces. Keeping that workspace between a layer's forward and backward would tie the
// backend to one layer per geometry, so backward reruns the forward with a workspace into scratch
// buffers of its own: one more cheap pass over x, and the op stays stateless like every other.
#include <unordered_map>

#include "io/error.h"
#include "model/cpu/dnnl_backend.h"
#include "model/cpu/dnnl_util.h"

namespace ds::model {

using dnnl_util::mut;
using dnnl_util::act;

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;


struct DnnlBackend::PoolPrims {
  memory::desc src, dst;
  dnnl::pooling_forward fwd;  // forward_training: also writes the workspace for max pooling
  dnnl::pooling_backward bwd;
  memory workspace, scratch_dst;  // owned by the primitive set; used only inside pool2d_backward
};

DnnlBackend::PoolPrims& DnnlBackend::pool_prims(const PoolDesc& d) {
  expect_block(d.block, "pooling");
  const auto key = std::make_tuple(d.in.n, d.in.c, d.in.h, d.in.w, d.k, d.stride, int(d.kind), d.pad_top,
                                   d.pad_bottom, d.pad_left, d.pad_right, d.block);
  auto it = pool_cache_.find(key);
  if (it != pool_cache_.end()) return *it->second;
  const Shape o = d.out();
  const memory::desc src = act(d.in, d.block), dst = act(o, d.block);  // x, y in the caller's block
  // Padded cells: oneDNN's max never picks them, and avg_exclude_padding divides by the window's
  // real cells only: Keras/TF semantics (model/kernels/pooling.h, which the tests compare with).
  const algorithm alg = d.kind == PoolKind::kMax ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
  const memory::dims strides{d.stride, d.stride}, kernel{d.k, d.k}, pad_l{d.pad_top, d.pad_left},
      pad_r{d.pad_bottom, d.pad_right};
  dnnl::pooling_forward::desc fd(prop_kind::forward_training, alg, src, dst, strides, kernel, pad_l, pad_r);
  dnnl::pooling_forward::primitive_desc fpd(fd, engine_);
  dnnl::pooling_backward::desc bd(alg, src, dst, strides, kernel, pad_l, pad_r);
  dnnl::pooling_backward::primitive_desc bpd(bd, engine_, fpd);
  auto p = std::make_shared<PoolPrims>(PoolPrims{src, dst, dnnl::pooling_forward(fpd), dnnl::pooling_backward(bpd),
                                                 memory(fpd.workspace_desc(), engine_), memory(dst, engine_)});
  pool_cache_.emplace(key, p);
  return *p;
}

void DnnlBackend::pool2d_forward(const PoolDesc& d, const float* x, float* y) {
  PoolPrims& p = pool_prims(d);
  memory src(p.src, engine_, mut(x)), dst(p.dst, engine_, y);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  if (d.kind == PoolKind::kMax) args.emplace(DNNL_ARG_WORKSPACE, p.workspace);  // required by forward_training
  p.fwd.execute(stream_, args);
  stream_.wait();
}

void DnnlBackend::pool2d_backward(const PoolDesc& d, const float* x, const float* dy, float* dx) {
  PoolPrims& p = pool_prims(d);
  memory ddst(p.dst, engine_, mut(dy)), dsrc(p.src, engine_, dx);
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_SRC, dsrc}};
  if (d.kind == PoolKind::kMax) {
    memory src(p.src, engine_, mut(x));
    p.fwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, p.scratch_dst}, {DNNL_ARG_WORKSPACE, p.workspace}});
    args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
  }
  p.bwd.execute(stream_, args);
  stream_.wait();
}

// Global average pooling of a blocked x: one average pooling whose window is the whole plane. The
// (N, C, 1, 1) output is described blocked too, as the pooling kernels want both sides alike; with
// one cell a plane that is NCHW's order.
struct DnnlBackend::GlobalPoolPrims {
  memory::desc src, dst;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward bwd;
};

DnnlBackend::GlobalPoolPrims& DnnlBackend::global_pool_prims(const Shape& s, int block) {
  if (block <= 0 || block != block_ || s.c % block != 0)
    throw Error("internal: blocked global average pooling of " + s.str() + " in block " + std::to_string(block) +
                " on a cpu backend whose block is " + std::to_string(block_));
  const auto key = std::make_tuple(s.n, s.c, s.h, s.w, block);
  auto it = global_pool_cache_.find(key);
  if (it != global_pool_cache_.end()) return *it->second;
  const memory::desc src = act(s, block), dst = act(Shape{s.n, s.c, 1, 1}, block);
  const memory::dims strides{1, 1}, kernel{s.h, s.w}, pad{0, 0};
  const algorithm alg = algorithm::pooling_avg_exclude_padding;  // no padding: the plain mean
  dnnl::pooling_forward::desc fd(prop_kind::forward_training, alg, src, dst, strides, kernel, pad, pad);
  dnnl::pooling_forward::primitive_desc fpd(fd, engine_);
  dnnl::pooling_backward::desc bd(alg, src, dst, strides, kernel, pad, pad);
  dnnl::pooling_backward::primitive_desc bpd(bd, engine_, fpd);
  auto p = std::make_shared<GlobalPoolPrims>(
      GlobalPoolPrims{src, dst, dnnl::pooling_forward(fpd), dnnl::pooling_backward(bpd)});
  global_pool_cache_.emplace(key, p);
  return *p;
}

void DnnlBackend::blocked_global_average_pool_forward(const Shape& s, int block, const float* x, float* y) {
  GlobalPoolPrims& p = global_pool_prims(s, block);
  p.fwd.execute(stream_, {{DNNL_ARG_SRC, memory(p.src, engine_, mut(x))}, {DNNL_ARG_DST, memory(p.dst, engine_, y)}});
  stream_.wait();
}

void DnnlBackend::blocked_global_average_pool_backward(const Shape& s, int block, const float* dy, float* dx) {
  GlobalPoolPrims& p = global_pool_prims(s, block);
  p.bwd.execute(stream_, {{DNNL_ARG_DIFF_DST, memory(p.dst, engine_, mut(dy))},
                          {DNNL_ARG_DIFF_SRC, memory(p.src, engine_, dx)}});
  stream_.wait();
}

}  // namespace ds::model
