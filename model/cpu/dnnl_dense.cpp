// DnnlBackend's dense layer: oneDNN inner product forward, backward-data and backward-weights,
// built once per (batch, in, out) and reused. Plain row-major layouts (nc, oi) so our buffers
// are read in place.
#include "model/cpu/dnnl_backend.h"
#include "model/cpu/dnnl_util.h"

namespace ds::model {

using dnnl_util::mut;
using dnnl_util::nchw;

using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;


struct DnnlBackend::DensePrims {
  memory::desc src, wei, bias, dst;
  dnnl::inner_product_forward::primitive_desc fwd_pd;
  dnnl::inner_product_forward fwd;
  std::unique_ptr<dnnl::inner_product_backward_data> bwd_data;  // built on first use
  std::unique_ptr<dnnl::inner_product_backward_weights> bwd_w;
};

DnnlBackend::DensePrims& DnnlBackend::dense_prims(int n, int in, int out) {
  const auto key = std::make_tuple(n, in, out);
  auto it = dense_cache_.find(key);
  if (it != dense_cache_.end()) return *it->second;
  memory::desc src({n, in}, dt::f32, tag::nc), wei({out, in}, dt::f32, tag::oi), bias({out}, dt::f32, tag::x),
      dst({n, out}, dt::f32, tag::nc);
  dnnl::inner_product_forward::desc fd(prop_kind::forward_training, src, wei, bias, dst);
  dnnl::inner_product_forward::primitive_desc fpd(fd, engine_);
  auto p = std::make_shared<DensePrims>(DensePrims{src, wei, bias, dst, fpd, dnnl::inner_product_forward(fpd), nullptr,
                                                   nullptr});
  dense_cache_.emplace(key, p);
  return *p;
}

void DnnlBackend::dense_forward(int n, int in, int out, const float* x, const float* w, const float* b, float* y) {
  DensePrims& p = dense_prims(n, in, out);
  memory src(p.src, engine_, mut(x)), wei(p.wei, engine_, mut(w)), bias(p.bias, engine_, mut(b)),
      dst(p.dst, engine_, y);
  p.fwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
  stream_.wait();
}

void DnnlBackend::dense_backward_data(int n, int in, int out, const float* dy, const float* w, float* dx) {
  DensePrims& p = dense_prims(n, in, out);
  if (!p.bwd_data) {
    dnnl::inner_product_backward_data::desc bd(p.src, p.wei, p.dst);
    p.bwd_data = std::make_unique<dnnl::inner_product_backward_data>(
        dnnl::inner_product_backward_data::primitive_desc(bd, engine_, p.fwd_pd));
  }
  memory ddst(p.dst, engine_, mut(dy)), wei(p.wei, engine_, mut(w)), dsrc(p.src, engine_, dx);
  p.bwd_data->execute(stream_, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dsrc}});
  stream_.wait();
}

void DnnlBackend::dense_backward_weights(int n, int in, int out, const float* x, const float* dy, float* dw,
                                         float* db) {
  DensePrims& p = dense_prims(n, in, out);
  if (!p.bwd_w) {
    dnnl::inner_product_backward_weights::desc wd(p.src, p.wei, p.bias, p.dst);
    p.bwd_w = std::make_unique<dnnl::inner_product_backward_weights>(
        dnnl::inner_product_backward_weights::primitive_desc(wd, engine_, p.fwd_pd));
  }
  memory src(p.src, engine_, mut(x)), ddst(p.dst, engine_, mut(dy)), dwei(p.wei, engine_, dw),
      dbias(p.bias, engine_, db);
  p.bwd_w->execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei},
                             {DNNL_ARG_DIFF_BIAS, dbias}});
  stream_.wait();
}

}  // namespace ds::model
