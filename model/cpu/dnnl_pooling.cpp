// DnnlBackend's max and average pooling as oneDNN primitives, built once per geometry.
//
// oneDNN's max-pool backward needs the workspace (where each maximum was) that a forward_training
// run produces. Keeping that workspace between a layer's forward and backward would tie the
// backend to one layer per geometry, so backward reruns the forward with a workspace into scratch
// buffers of its own: one more cheap pass over x, and the op stays stateless like every other.
#include <unordered_map>

#include "model/cpu/dnnl_backend.h"
#include "model/cpu/dnnl_util.h"

namespace ds::model {

using dnnl_util::mut;
using dnnl_util::nchw;

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
  const auto key = std::make_tuple(d.in.n, d.in.c, d.in.h, d.in.w, d.k, d.stride, int(d.kind), d.pad_top,
                                   d.pad_bottom, d.pad_left, d.pad_right);
  auto it = pool_cache_.find(key);
  if (it != pool_cache_.end()) return *it->second;
  const Shape o = d.out();
  const memory::desc src = nchw(d.in), dst = nchw(o);
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

}  // namespace ds::model
