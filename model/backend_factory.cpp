// Choosing a backend, and loading the CUDA one from its plugin (libdownscale_cuda.so) with dlopen,
// so the executable needs no CUDA library: a CPU node, or one whose CUDA libraries are missing,
// runs on the CPU under run.device auto (--device auto) with one line saying why instead of dying in the loader.
#include <dlfcn.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "io/bundle_environment.h"
#include "io/error.h"
#include "io/executable_dir.h"
#include "model/backend.h"
#include "model/cuda_plugin_abi.h"
#include "model/nccl_plugin.h"
#include "train/distributed.h"  // the Communicator class (header only here)

namespace ds::model {
namespace {

constexpr const char* kPluginName = "libdownscale_cuda.so";

struct Plugin {
  const CudaPluginApi* api = nullptr;
  std::string path;
  std::string why_not;  // when api is null
};

// $DOWNSCALE_CUDA_PLUGIN if set (no fallback: the user chose), else beside the executable, else
// ../lib (the bundle's and an install's layout). The first file that exists is the one loaded:
// if it fails (its CUDA libraries missing), that is the reason given.
Plugin load_plugin() {
  Plugin p;
  std::vector<std::string> candidates;
  const char* env = std::getenv("DOWNSCALE_CUDA_PLUGIN");
  if (env && *env) {
    candidates.push_back(env);
  } else {
    const std::string found = executable_dir(), dir = found.empty() ? "." : found;
    candidates = {dir + "/" + kPluginName, dir + "/../lib/" + kPluginName};
  }
  for (const auto& c : candidates) {
    if (!(env && *env) && access(c.c_str(), F_OK) != 0) continue;
    p.path = c;
    // Never closed: backends created by it live until exit.
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      p.why_not = "the CUDA plugin does not load (" + std::string(e ? e : c) + ")";
      // bin/env.sh adds a PyTorch installation's CUDA libraries to the library path; a process
      // cannot add them to its own.
      if (bundle_without_env_sh())
        p.why_not += "; run it through the bundle's bin/env.sh, which finds the CUDA libraries of a PyTorch installation";
      return p;
    }
    auto entry = reinterpret_cast<DsCudaPluginEntry>(dlsym(h, DS_CUDA_PLUGIN_ENTRY));
    if (!entry) {
      p.why_not = c + " is no downscale CUDA plugin (no symbol " DS_CUDA_PLUGIN_ENTRY ")";
      return p;
    }
    const CudaPluginApi* api = entry(DS_CUDA_PLUGIN_ABI);
    if (!api || api->abi != DS_CUDA_PLUGIN_ABI || !api->probe || !api->create_backend) {
      p.why_not = c + " was built for another plugin interface than this program's (version " +
                  std::to_string(DS_CUDA_PLUGIN_ABI) + "): use the plugin built with it";
      return p;
    }
    p.api = api;
    return p;
  }
  p.why_not = std::string("no CUDA plugin (") + kPluginName + " is neither beside the executable nor in ../lib; " +
              "DOWNSCALE_CUDA_PLUGIN names another)";
  return p;
}

const Plugin& plugin() {
  static const Plugin p = load_plugin();
  return p;
}

}  // namespace

CudaProbe cuda_probe() {
  static std::once_flag once;
  static CudaProbe probe;
  std::call_once(once, [] {
    const Plugin& p = plugin();
    if (!p.api) {
      probe.reason = p.why_not;
      return;
    }
    probe = p.api->probe();
    if (probe.devices <= 0 && probe.reason.empty()) probe.reason = "the CUDA plugin found no GPU";
  });
  return probe;
}

bool cuda_available() { return cuda_probe().devices > 0; }

int cuda_device_count() { return cuda_probe().devices; }

std::unique_ptr<Backend> make_cuda_backend(int device) {
  const Plugin& p = plugin();
  if (!p.api) throw Error("no CUDA backend: " + p.why_not);
  return p.api->create_backend(device);
}

namespace {
// A plugin built before the NCCL members were appended has a shorter table.
bool has_nccl_members(const CudaPluginApi& api) {
  return api.size >= offsetof(CudaPluginApi, create_nccl_communicator) + sizeof(api.create_nccl_communicator) &&
         api.nccl_unavailable && api.create_nccl_communicator;
}
}  // namespace

std::string nccl_unavailable_reason() {
  const Plugin& p = plugin();
  if (!p.api) return p.why_not;
  if (!has_nccl_members(*p.api)) return p.path + " was built without NCCL support (an older plugin)";
  return p.api->nccl_unavailable();
}

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& be) {
  const std::string why_not = nccl_unavailable_reason();
  if (!why_not.empty()) throw Error("no NCCL: " + why_not);
  return plugin().api->create_nccl_communicator(host, be);
}

namespace {
// How messages name the setting: an option as typed ("--device"), a config key quoted ("key
// 'run.device'"), and how to ask for the CPU through it.
std::string setting_named(const std::string& setting) {
  return setting.rfind("--", 0) == 0 ? setting : "key '" + setting + "'";
}
std::string cpu_through(const std::string& setting) {
  return setting.rfind("--", 0) == 0 ? "pass " + setting + " cpu" : "set " + setting + ": cpu";
}
}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& device, int threads, int local_rank, const std::string& setting,
                                      const std::string& origin) {
  if (device == "cpu") return make_cpu_backend(threads);
  const std::string named = (origin.empty() ? "" : origin + ": ") + setting_named(setting);
  if (device != "auto" && device != "cuda")
    throw UsageError(named + " is '" + device + "', expected auto, cpu or cuda");
  const CudaProbe gpu = cuda_probe();
  if (gpu.devices > 0) return make_cuda_backend(local_rank % gpu.devices);
  // GPUs that exist but cannot be used are a broken node, not a CPU node: training on the CPU
  // there would silently take days instead of minutes.
  if (gpu.unusable)
    throw UsageError(named + " is " + device + " but the GPUs here cannot be used: " + gpu.reason +
                     (device == "auto" ? " (" + cpu_through(setting) + " to run on the CPU anyway)" : ""));
  if (device == "cuda") throw UsageError(named + " is cuda but no GPU can be used: " + gpu.reason);
  spdlog::info("{} auto: running on the CPU: {}", setting, gpu.reason);
  return make_cpu_backend(threads);
}

}  // namespace ds::model
