#include "train/layer_profile.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "io/error.h"
#include "io/read_file.h"
#include "model/adam.h"
#include "model/loss_accumulator.h"

namespace ds {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int64_t LayerTime::floats() const { return std::accumulate(param_floats.begin(), param_floats.end(), int64_t(0)); }

int64_t LayerProfile::parameter_floats() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.floats();
  return n;
}

double LayerProfile::layers_backward_s() const {
  double s = 0;
  for (const auto& l : layers) s += l.backward_s;
  return s;
}

std::string LayerProfile::to_json() const {
  nlohmann::json j;
  j["device"] = device;
  j["model"] = model;
  j["precision"] = precision;
  j["batch"] = batch;
  j["steps"] = steps;
  j["forward_s"] = forward_s;
  j["loss_s"] = loss_s;
  j["backward_s"] = backward_s;
  j["optimizer_s"] = optimizer_s;
  j["parameter_floats"] = parameter_floats();
  auto& ls = j["layers"] = nlohmann::json::array();
  for (const auto& l : layers)
    ls.push_back({{"name", l.name}, {"backward_s", l.backward_s}, {"forward_s", l.forward_s}, {"param_floats", l.floats()},
                  {"params", l.params}, {"floats", l.param_floats}});
  return j.dump(1) + "\n";
}

LayerProfile LayerProfile::from_json(const std::string& text, const std::string& what) {
  LayerProfile p;
  try {
    auto j = nlohmann::json::parse(text);
    if (j.is_object() && j.contains("profile") && !j.contains("layers")) j = j["profile"];  // a --predict-scaling --out
    p.device = j.at("device").get<std::string>();
    p.model = j.value("model", std::string());
    p.precision = j.value("precision", std::string());
    p.batch = j.at("batch").get<int>();
    p.steps = j.value("steps", 0);
    p.forward_s = j.at("forward_s").get<double>();
    p.loss_s = j.value("loss_s", 0.0);
    p.backward_s = j.at("backward_s").get<double>();
    p.optimizer_s = j.at("optimizer_s").get<double>();
    for (const auto& l : j.at("layers")) {
      LayerTime t;
      t.name = l.at("name").get<std::string>();
      t.backward_s = l.at("backward_s").get<double>();
      t.forward_s = l.value("forward_s", 0.0);
      t.params = l.value("params", std::vector<std::string>());
      t.param_floats = l.value("floats", std::vector<int64_t>());
      if (t.param_floats.empty() && l.value("param_floats", int64_t(0)) > 0)
        t.param_floats = {l.at("param_floats").get<int64_t>()};  // a hand-written profile: one gradient
      p.layers.push_back(t);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(what + ": not a layer profile (" + e.what() + ")");
  }
  if (p.batch < 1 || p.layers.empty() || p.backward_s <= 0 || p.forward_s < 0 || p.optimizer_s < 0)
    throw InputError(what + ": a layer profile needs batch >= 1, layers, backward_s > 0 and times >= 0");
  return p;
}

LayerProfile LayerProfile::load(const std::string& path) {
  return from_json(read_file(path), path);
}

LayerProfile measure_layer_profile(model::Net& net, model::Backend& be, model::LossKind loss, const model::Tensor& x,
                                   const model::Tensor& y, const model::Tensor& mask, int warmup, int steps,
                                   const std::string& precision) {
  model::Adam adam(net.params(), be);
  // The loss as the trainer takes it: valid points counted once on the host, the loss added in
  // backend memory (no download of targets and mask, no wait for the sum, each step).
  const int64_t hw = int64_t(y.shape().h) * y.shape().w;
  const int64_t valid = model::count_valid_points(mask.to_host().data(), y.to_host().data(), y.shape().n, hw);
  model::LossAccumulator acc(be);
  const auto loss_fn = [&](const model::Tensor& out, model::Tensor& d_out) {
    model::masked_loss_accumulate(be, loss, out, y, mask, valid, 1.0, 0, acc.data(), &d_out);
  };
  return measure_layer_profile(net, be, x, loss_fn, [&] { adam.step(1e-6); }, warmup, steps, precision);
}

LayerProfile measure_layer_profile(model::Net& net, model::Backend& be, const model::Tensor& x, const LossStep& loss,
                                   const std::function<void()>& optimizer_step, int warmup, int steps,
                                   const std::string& precision) {
  LayerProfile p;
  p.device = be.name();
  const auto& spec = net.spec();
  p.model = spec.name + " " + std::to_string(spec.in_channels) + "x" + std::to_string(spec.in_h) + "x" +
            std::to_string(spec.in_w);
  p.precision = precision;
  p.batch = x.shape().n;
  p.steps = steps;
  model::Tensor d_out(be, net.output_shape(p.batch));

  // Per layer, in backward order: names, gradients and the per-step times.
  std::vector<LayerTime> layers;
  std::vector<std::vector<double>> layer_s;
  std::vector<double> fwd, lss, bwd, opt;
  // Forward per layer, by name (every layer also has a backward row, named the same).
  std::map<std::string, std::vector<double>> forward_layer_s;
  auto step = [&](bool per_layer, bool record) {
    // Per-layer times need the layers one after another (no lanes); whole steps run as training does.
    net.set_lanes(!per_layer);
    be.synchronize();
    auto t = Clock::now();
    auto t_fwd = t;
    auto forward_hook = [&](const std::string& name) {
      be.synchronize();
      if (record) forward_layer_s[name].push_back(since(t_fwd));
      t_fwd = Clock::now();
    };
    const model::Tensor& out = per_layer ? net.forward(x, forward_hook) : net.forward(x);
    be.synchronize();
    if (record && !per_layer) fwd.push_back(since(t));  // whole, without the per-layer waits
    t = Clock::now();
    loss(out, d_out);
    be.synchronize();
    if (record) lss.push_back(since(t));
    size_t k = 0;
    auto t_layer = Clock::now();
    auto hook = [&](const std::vector<model::Param>& ps) {
      be.synchronize();
      const double s = since(t_layer);
      if (layers.size() <= k) {
        LayerTime l;
        l.name = net.backward_layer();
        for (auto it = ps.rbegin(); it != ps.rend(); ++it) {
          l.params.push_back(it->name);
          l.param_floats.push_back(it->grad->size());
        }
        layers.push_back(l);
        layer_s.emplace_back();
      }
      if (record) layer_s[k].push_back(s);
      ++k;
      t_layer = Clock::now();
    };
    t = Clock::now();
    t_layer = t;
    if (per_layer)
      net.backward(d_out, hook);
    else
      net.backward(d_out);
    be.synchronize();
    if (record && !per_layer) bwd.push_back(since(t));
    t = Clock::now();
    optimizer_step();
    be.synchronize();
    if (record) opt.push_back(since(t));
  };
  step(true, false);  // names the layers (and warms up)
  for (int i = 0; i < warmup; ++i) step(false, false);
  // Alternating, so that both kinds of step see the same machine.
  for (int i = 0; i < steps; ++i) {
    step(true, true);
    step(false, true);
  }
  p.forward_s = median(fwd);
  p.loss_s = median(lss);
  p.backward_s = median(bwd);
  p.optimizer_s = median(opt);
  for (size_t k = 0; k < layers.size(); ++k) {
    layers[k].backward_s = median(layer_s[k]);
    const auto f = forward_layer_s.find(layers[k].name);
    if (f != forward_layer_s.end()) layers[k].forward_s = median(f->second);
    p.layers.push_back(layers[k]);
  }
  return p;
}

}  // namespace ds
