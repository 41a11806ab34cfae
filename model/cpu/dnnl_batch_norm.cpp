// DnnlBackend's batch normalization: oneDNN batch_normalization with separate scale and shift
// (use_scale | use_shift), built once per (shape, eps). Training computes the batch statistics
// and writes them to the caller's mean/var; inference and backward take them as inputs.
// x, y, dx and dy are in the caller's channel block (nChw16c, for which oneDNN has JIT kernels;
// its NCHW one is a slower generic loop: 21 % of a ResNet50 step before activations stayed
// blocked).
#include "model/cpu/dnnl_backend.h"
#include "model/cpu/dnnl_util.h"

namespace ds::model {

using dnnl_util::mut;
using dnnl_util::act;

using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;


struct DnnlBackend::BatchNormPrims {
  memory::desc data, stat;
  dnnl::batch_normalization_forward train, infer;
  dnnl::batch_normalization_backward bwd;
};

DnnlBackend::BatchNormPrims& DnnlBackend::batch_norm_prims(const Shape& s, int block, float eps) {
  expect_block(block, "batch normalization");
  const auto key = std::make_tuple(s.n, s.c, s.h, s.w, block, eps);
  auto it = batch_norm_cache_.find(key);
  if (it != batch_norm_cache_.end()) return *it->second;
  const memory::desc data = act(s, block), stat({s.c}, dt::f32, tag::x);
  const auto scale_shift = normalization_flags::use_scale | normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc td(prop_kind::forward_training, data, eps, scale_shift);
  dnnl::batch_normalization_forward::primitive_desc tpd(td, engine_);
  dnnl::batch_normalization_forward::desc id(prop_kind::forward_inference, data, eps,
                                             scale_shift | normalization_flags::use_global_stats);
  dnnl::batch_normalization_forward::primitive_desc ipd(id, engine_);
  // prop_kind::backward: gradients of the data and of scale and shift.
  dnnl::batch_normalization_backward::desc bd(prop_kind::backward, data, data, eps, scale_shift);
  dnnl::batch_normalization_backward::primitive_desc bpd(bd, engine_, tpd);
  auto p = std::make_shared<BatchNormPrims>(BatchNormPrims{data, stat, dnnl::batch_normalization_forward(tpd),
                                                           dnnl::batch_normalization_forward(ipd),
                                                           dnnl::batch_normalization_backward(bpd)});
  batch_norm_cache_.emplace(key, p);
  return *p;
}

void DnnlBackend::batch_norm_forward_training(const Shape& s, int block, const float* x, const float* gamma,
                                              const float* beta, float eps, float* y, float* mean, float* var) {
  BatchNormPrims& p = batch_norm_prims(s, block, eps);
  memory src(p.data, engine_, mut(x)), dst(p.data, engine_, y), sc(p.stat, engine_, mut(gamma)),
      sh(p.stat, engine_, mut(beta)), m(p.stat, engine_, mean), v(p.stat, engine_, var);
  p.train.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, sc}, {DNNL_ARG_SHIFT, sh},
                            {DNNL_ARG_MEAN, m}, {DNNL_ARG_VARIANCE, v}});
  stream_.wait();
}

void DnnlBackend::batch_norm_forward_inference(const Shape& s, int block, const float* x, const float* gamma,
                                               const float* beta, const float* mean, const float* var, float eps,
                                               float* y) {
  BatchNormPrims& p = batch_norm_prims(s, block, eps);
  memory src(p.data, engine_, mut(x)), dst(p.data, engine_, y), sc(p.stat, engine_, mut(gamma)),
      sh(p.stat, engine_, mut(beta)), m(p.stat, engine_, mut(mean)), v(p.stat, engine_, mut(var));
  p.infer.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, sc}, {DNNL_ARG_SHIFT, sh},
                            {DNNL_ARG_MEAN, m}, {DNNL_ARG_VARIANCE, v}});
  stream_.wait();
}

void DnnlBackend::batch_norm_backward(const Shape& s, int block, const float* x, const float* dy, const float* gamma,
                                      const float* mean, const float* var, float eps, float* dx, float* dgamma,
                                      float* dbeta) {
  BatchNormPrims& p = batch_norm_prims(s, block, eps);
  memory src(p.data, engine_, mut(x)), ddst(p.data, engine_, mut(dy)), dsrc(p.data, engine_, dx),
      sc(p.stat, engine_, mut(gamma)), m(p.stat, engine_, mut(mean)), v(p.stat, engine_, mut(var)),
      dsc(p.stat, engine_, dgamma), dsh(p.stat, engine_, dbeta);
  // oneDNN 2.6 wants the shift among backward's inputs although no gradient depends on it (dx,
  // dgamma, dbeta are functions of x, dy, gamma and the statistics only); gamma's buffer, of the
  // same shape, stands in for it so the interface needs no beta it would never read.
  p.bwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_SCALE, sc}, {DNNL_ARG_SHIFT, sc},
                          {DNNL_ARG_MEAN, m},
                          {DNNL_ARG_VARIANCE, v}, {DNNL_ARG_DIFF_SRC, dsrc}, {DNNL_ARG_DIFF_SCALE, dsc},
                          {DNNL_ARG_DIFF_SHIFT, dsh}});
  stream_.wait();
}

}  // namespace ds::model
