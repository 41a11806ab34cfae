#include "train/checkpoint.h"

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/hdf5_file.h"

namespace ds {

namespace {

std::vector<hsize_t> dims_of(const model::Tensor& t) {
  const auto& s = t.shape();
  return {hsize_t(s.n), hsize_t(s.c), hsize_t(s.h), hsize_t(s.w)};
}

void load_tensor(const H5File& f, const std::string& name, model::Tensor& t) {
  if (!f.exists(name)) throw InputError(f.path() + ": checkpoint has no " + name);
  if (f.dims(name) != dims_of(t))
    throw InputError(f.path() + ": " + name + " has a different shape than the model's " + t.shape().str());
  std::vector<float> host(t.size());
  f.read(name, host.data());
  t.upload(host.data());
}

}  // namespace

void save_checkpoint(const std::string& path, model::Net& net, model::Adam* adam, const TrainState& state) {
  AtomicFile out(path);
  H5File f = H5File::create(out.temp_path());
  f.set_attr("/", "model_spec", net.spec().to_json());
  f.set_attr("/", "epoch", int64_t{state.epoch});
  f.set_attr("/", "rng_state", state.rng_state);
  f.set_attr("/", "best_val_loss", state.best_val_loss);
  f.set_attr("/", "epochs_without_improvement", int64_t{state.epochs_without_improvement});
  f.set_attr("/", "software_version", std::string("downscale " DOWNSCALE_VERSION));
  auto params = net.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    f.write("/weights/" + p.name, dims_of(*p.value), p.value->to_host().data());
    if (adam) {
      f.write("/adam/m/" + p.name, dims_of(adam->m()[i]), adam->m()[i].to_host().data());
      f.write("/adam/v/" + p.name, dims_of(adam->v()[i]), adam->v()[i].to_host().data());
    }
  }
  f.set_attr("/", "adam_steps", int64_t{adam ? adam->steps() : 0});
  f.close();
  out.commit();
}

model::ModelSpec read_checkpoint_spec(const std::string& path) {
  H5File f = H5File::open(path);
  return model::ModelSpec::from_json(f.attr_string("/", "model_spec"));
}

TrainState load_checkpoint(const std::string& path, model::Net& net, model::Adam* adam) {
  H5File f = H5File::open(path);
  auto params = net.params();
  for (size_t i = 0; i < params.size(); ++i) {
    load_tensor(f, "/weights/" + params[i].name, *params[i].value);
    if (adam) {
      load_tensor(f, "/adam/m/" + params[i].name, adam->m()[i]);
      load_tensor(f, "/adam/v/" + params[i].name, adam->v()[i]);
    }
  }
  if (adam) adam->set_steps(f.attr_int("/", "adam_steps"));
  TrainState s;
  s.epoch = static_cast<int>(f.attr_int("/", "epoch"));
  s.rng_state = f.attr_string("/", "rng_state");
  s.best_val_loss = f.attr_double("/", "best_val_loss");
  s.epochs_without_improvement = static_cast<int>(f.attr_int("/", "epochs_without_improvement"));
  return s;
}

}  // namespace ds
