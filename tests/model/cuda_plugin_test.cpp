// The CUDA plugin boundary (model/backend_factory.cpp, model/cuda/cuda_plugin.cu): no program
// links a CUDA library, the plugin exports one symbol, errors thrown inside it reach the program
// as ds::Error, and without a GPU the probe says why.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "io/error.h"
#include "model/backend.h"
#include "support/scoped_env.h"

namespace ds::model {
namespace {

using ds::test::ScopedEnv;

std::string run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

std::string self() {
  std::array<char, 4096> buf{};
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), size_t(n)) : "";
}

std::string plugin_path() { return self().substr(0, self().rfind('/')) + "/../lib/libdownscale_cuda.so"; }

// A CPU node running the bundle has no CUDA libraries, so the plugin cannot load there: the tests
// of a loaded plugin skip naming the missing library. Only that: where the libraries are (this
// build machine, CI) a plugin that does not load still fails them.
std::string cuda_library_missing() {
  const std::string why = cuda_probe().reason;
  const bool missing = why.find("the CUDA plugin does not load") != std::string::npos &&
                       why.find("cannot open shared object file") != std::string::npos &&
                       std::regex_search(why, std::regex("lib(cu|nccl|nvidia)"));
  // gpu_check.sh (DOWNSCALE_REQUIRE_GPU=1) wants the plugin loaded: no skip there.
  const char* require = std::getenv("DOWNSCALE_REQUIRE_GPU");
  if (require && std::string(require) == "1") return "";
  return missing ? why : "";
}

// readelf is binutils': a cluster node (or the bundle's own test, PATH emptied) may lack it.
bool have_readelf() { return run("readelf --version 2>&1").find("GNU readelf") != std::string::npos; }

void expect_no_cuda_needed(const std::string& binary) {
  const std::string dyn = run("readelf -d '" + binary + "' 2>&1");
  ASSERT_NE(dyn.find("(NEEDED)"), std::string::npos) << "readelf failed on " << binary << ": " << dyn;
  std::smatch m;
  EXPECT_FALSE(std::regex_search(dyn, m, std::regex("\\[lib(cuda|cudart|cudnn|cublas|nccl|nvidia)[^\\]]*\\]")))
      << binary << " links a CUDA library: " << m.str();
}

TEST(ModelCudaPlugin, ProgramsLinkNoCudaLibrary) {
  if (!have_readelf()) GTEST_SKIP() << "no readelf here (binutils)";
  expect_no_cuda_needed(self());
  const char* downscale = std::getenv("DS_BINARY");
  if (downscale) expect_no_cuda_needed(downscale);
}

TEST(ModelCudaPlugin, ThrowInsidePluginIsCaughtAsDsError) {
#ifndef DS_CUDA_PLUGIN_BUILT
  GTEST_SKIP() << "this build has no CUDA plugin";
#endif
  if (const std::string why = cuda_library_missing(); !why.empty()) GTEST_SKIP() << why;
  // Device 9999 exists nowhere: the plugin's CudaBackend throws (no device at all here, or no
  // such device on a GPU machine). Caught only as std::exception would mean two unrelated
  // type_infos for ds::Error, and every GPU error would print as a crash.
  try {
    make_cuda_backend(9999);
    FAIL() << "device 9999 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device"), std::string::npos) << e.what();
    EXPECT_EQ(e.code(), kExitFailure);
  } catch (const std::exception& e) {
    FAIL() << "not caught as ds::Error: " << e.what();
  }
}

// Every switch of the CUDA backend is read before it looks for the device: a value it does not
// know is an error naming the variable and what it takes, on a GPU machine or not, and each value
// the docs name is taken (the error is then the missing device 9999's). Runs wherever the plugin
// loads, so a switch's parse is checked on CI too, and on a GPU a typo in gpu_session.sh fails here
// before it costs a run.
TEST(ModelCudaPlugin, EverySwitchValueIsTakenOrNamed) {
#ifndef DS_CUDA_PLUGIN_BUILT
  GTEST_SKIP() << "this build has no CUDA plugin";
#endif
  if (const std::string why = cuda_library_missing(); !why.empty()) GTEST_SKIP() << why;
  const auto error_of = [] {
    try {
      make_cuda_backend(9999);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(device 9999 was accepted)");
  };
  const std::vector<std::pair<const char*, std::vector<const char*>>> switches = {
      {"DOWNSCALE_CUDA_LAYOUT", {"nhwc", "nchw"}},
      {"DOWNSCALE_CUDA_NARROW", {"0", "1"}},
      {"DOWNSCALE_CUDA_NARROW_WINDOW", {"0", "1"}},
      {"DOWNSCALE_CUDA_WGRAD_GEMM", {"0", "1", "timed"}},
      {"DOWNSCALE_CUDA_FUSE", {"0", "1"}},
      {"DOWNSCALE_CUDA_GRAPH", {"0", "1", "timed"}},
      {"DOWNSCALE_CUDA_TF32_PASSES", {"0", "1", "timed"}},
      {"DOWNSCALE_CUDA_PHASE_F2", {"0", "1"}},
      {"DOWNSCALE_CUDA_PAD_CHANNELS", {"0", "1", "all", "timed"}},
      {"DOWNSCALE_CUDA_DEFER_WEIGHTS", {"0", "1"}},
      {"DOWNSCALE_CUDA_GRAPH_NOTES", {"fp32", "pytorch"}},
      {"DOWNSCALE_CUDA_BIAS_GRAD", {"cudnn", "kernel"}},
      {"DOWNSCALE_CUDA_FUSE16", {"0", "1"}},
      {"DOWNSCALE_CUDA_ACTIVATIONS16", {"0", "1"}},
      {"DOWNSCALE_CUDA_TRANSFORMS", {"0", "1"}},
      {"DOWNSCALE_CUDA_LANES", {"0", "5", "16"}},
      {"DOWNSCALE_CUDA_WGRAD_GEMM_MB", {"1", "512"}},
      {"DOWNSCALE_CUDA_TEST_PADDING", {"padded", "plain"}},
  };
  for (const auto& [name, values] : switches) {
    for (const char* v : values) {
      const ScopedEnv set(name, v);
      const std::string what = error_of();
      EXPECT_NE(what.find("CUDA device"), std::string::npos) << name << "=" << v << " not taken: " << what;
    }
    const ScopedEnv set(name, "bogus");
    const std::string what = error_of();
    EXPECT_EQ(what.rfind(std::string(name) + " is 'bogus', expected ", 0), 0u) << name << "=bogus: " << what;
  }
}

TEST(ModelCudaPlugin, PluginExportsOnlyItsEntryPoint) {
#ifndef DS_CUDA_PLUGIN_BUILT
  GTEST_SKIP() << "this build has no CUDA plugin";
#endif
  if (!have_readelf()) GTEST_SKIP() << "no readelf here (binutils)";
  // Its private copies of ds:: code must not interpose on the program's (or the reverse): no
  // exported mangled name in namespace ds ("2ds": functions, vtables, typeinfo).
  const std::string syms = run("readelf --dyn-syms -W '" + plugin_path() + "' 2>&1");
  ASSERT_NE(syms.find("ds_cuda_plugin"), std::string::npos) << syms.substr(0, 2000);
  std::smatch m;
  EXPECT_FALSE(std::regex_search(syms, m, std::regex("GLOBAL\\s+DEFAULT\\s+\\d+\\s+_Z\\S*2ds\\S*")))
      << "exported: " << m.str();
}

TEST(ModelCudaPlugin, NoGpuMeansAReason) {
  const CudaProbe p = cuda_probe();
  if (p.devices > 0) GTEST_SKIP() << p.devices << " GPU(s) here";
  EXPECT_FALSE(p.reason.empty());
  EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_FALSE(cuda_available());
#ifdef DS_CUDA_PLUGIN_BUILT
  if (const std::string why = cuda_library_missing(); !why.empty()) GTEST_SKIP() << why;
  // The plugin loaded: the reason comes from it (the driver, the GPUs), not from the loader.
  EXPECT_EQ(p.reason.find("plugin"), std::string::npos) << p.reason;
#endif
}

TEST(ModelCudaPlugin, AutoFallsBackToCpuAndCudaIsAUsageError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is here";
  EXPECT_NE(make_backend("auto", 1)->name().find("cpu"), std::string::npos);
  // The message names the setting the user typed: the config key for train/predict, the option
  // for benchmark and the bench tools (which have no run.device).
  for (const auto& [setting, named] : {std::pair<std::string, std::string>{"run.device", "key 'run.device' is cuda"},
                                       {"--device", "--device is cuda"}}) {
    try {
      make_backend("cuda", 1, 0, setting);
      FAIL() << setting << " cuda accepted without a GPU";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(named, 0), 0u) << what;
      EXPECT_NE(what.find(cuda_probe().reason), std::string::npos) << what;
      if (setting == "--device") {
        EXPECT_EQ(what.find("run.device"), std::string::npos) << what;
      }
    }
  }
}

}  // namespace
}  // namespace ds::model
