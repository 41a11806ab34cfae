// DnnlBackend's dense layer: oneDNN inner product forward, backward-data and backward-weights,
// built once per (batch, in, out) and reused. Plain row-major layouts (nc, oi) so our buffers
// are read in place (FP32), or through bfloat16 copies under BF16 math.
#include "model/cpu/dnnl_backend.h"
#include "model/cpu/dnnl_util.h"

namespace ds::model {

using dnnl_util::mut;
using dnnl_util::nchw;

using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;


namespace {
// One operand the primitives read: f32 in our buffer, or a bfloat16 copy under BF16 math, made by
// a reorder into one of the convolution workspaces (free between ops, which run one at a time).
struct DenseInput {
  memory::desc user, prim;
  std::unique_ptr<dnnl::reorder> to_prim;  // null when prim is the user's f32 itself
  DenseInput(const dnnl::engine& e, const memory::desc& u, bool bf16) : user(u), prim(u) {
    if (!bf16) return;
    prim = memory::desc(u.dims(), dt::bf16, u.dims().size() == 2 ? tag::ab : tag::a);
    to_prim = std::make_unique<dnnl::reorder>(dnnl::reorder::primitive_desc(e, u, e, prim));
  }
};
}  // namespace

struct DnnlBackend::DensePrims {
  memory::desc src, wei, bias, dst;  // f32: the user's buffers and what the primitives write
  DenseInput src_in, wei_in, dst_in;  // what they read (dst_in: the output gradient)
  dnnl::inner_product_forward::primitive_desc fwd_pd;
  dnnl::inner_product_forward fwd;
  std::unique_ptr<dnnl::inner_product_backward_data> bwd_data;  // built on first use
  std::unique_ptr<dnnl::inner_product_backward_weights> bwd_w;
};

// BF16 (set_math(kBf16)): src, weights and the output gradient are read as bfloat16 copies; dst,
// diff_src, diff_weights and diff_bias are FP32, accumulated in FP32.
DnnlBackend::DensePrims& DnnlBackend::dense_prims(int n, int in, int out) {
  const auto key = std::make_tuple(n, in, out, bf16_);
  auto it = dense_cache_.find(key);
  if (it != dense_cache_.end()) return *it->second;
  memory::desc src({n, in}, dt::f32, tag::nc), wei({out, in}, dt::f32, tag::oi), bias({out}, dt::f32, tag::x),
      dst({n, out}, dt::f32, tag::nc);
  DenseInput src_in(engine_, src, bf16_), wei_in(engine_, wei, bf16_), dst_in(engine_, dst, bf16_);
  dnnl::inner_product_forward::desc fd(prop_kind::forward_training, src_in.prim, wei_in.prim, bias, dst);
  dnnl::inner_product_forward::primitive_desc fpd(fd, engine_);
  auto p = std::make_shared<DensePrims>(DensePrims{src, wei, bias, dst, std::move(src_in), std::move(wei_in),
                                                   std::move(dst_in), fpd, dnnl::inner_product_forward(fpd), nullptr,
                                                   nullptr});
  dense_cache_.emplace(key, p);
  return *p;
}

namespace {
// The memory a primitive reads for `op`: the user's buffer, or its bfloat16 copy in `ws`.
memory dense_in(const dnnl::engine& e, dnnl::stream& s, const DenseInput& op, const float* user, HostBuffer& ws) {
  memory u(op.user, e, mut(user));
  if (!op.to_prim) return u;
  memory m(op.prim, e, ws.reserve(op.prim.get_size()));
  op.to_prim->execute(s, u, m);
  return m;
}
}  // namespace

void DnnlBackend::dense_forward(int n, int in, int out, const float* x, const float* w, const float* b, float* y) {
  DensePrims& p = dense_prims(n, in, out);
  memory src = dense_in(engine_, stream_, p.src_in, x, conv_ws_[kA]),
         wei = dense_in(engine_, stream_, p.wei_in, w, conv_ws_[kB]);
  memory bias(p.bias, engine_, mut(b)), dst(p.dst, engine_, y);
  p.fwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
  stream_.wait();
}

void DnnlBackend::dense_backward_data(int n, int in, int out, const float* dy, const float* w, float* dx) {
  DensePrims& p = dense_prims(n, in, out);
  if (!p.bwd_data) {
    dnnl::inner_product_backward_data::desc bd(p.src, p.wei_in.prim, p.dst_in.prim);
    p.bwd_data = std::make_unique<dnnl::inner_product_backward_data>(
        dnnl::inner_product_backward_data::primitive_desc(bd, engine_, p.fwd_pd));
  }
  memory ddst = dense_in(engine_, stream_, p.dst_in, dy, conv_ws_[kA]),
         wei = dense_in(engine_, stream_, p.wei_in, w, conv_ws_[kB]);
  memory dsrc(p.src, engine_, dx);
  p.bwd_data->execute(stream_, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dsrc}});
  stream_.wait();
}

void DnnlBackend::dense_backward_weights(int n, int in, int out, const float* x, const float* dy, float* dw,
                                         float* db) {
  DensePrims& p = dense_prims(n, in, out);
  if (!p.bwd_w) {
    dnnl::inner_product_backward_weights::desc wd(p.src_in.prim, p.wei, p.bias, p.dst_in.prim);
    p.bwd_w = std::make_unique<dnnl::inner_product_backward_weights>(
        dnnl::inner_product_backward_weights::primitive_desc(wd, engine_, p.fwd_pd));
  }
  memory src = dense_in(engine_, stream_, p.src_in, x, conv_ws_[kA]),
         ddst = dense_in(engine_, stream_, p.dst_in, dy, conv_ws_[kB]);
  memory dwei(p.wei, engine_, dw), dbias(p.bias, engine_, db);
  p.bwd_w->execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei},
                             {DNNL_ARG_DIFF_BIAS, dbias}});
  stream_.wait();
}

}  // namespace ds::model
