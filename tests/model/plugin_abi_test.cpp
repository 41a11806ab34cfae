// The Backend class crosses the CUDA plugin boundary (model/cuda_plugin_abi.h): a plugin built
// before a virtual function was added or moved is called through the wrong vtable slots, so
// DS_CUDA_PLUGIN_ABI must be bumped with every such change, and the loader then refuses the old
// plugin with a message. Nothing at run time can see a vtable's layout, so this test pins the
// virtual declarations of model/backend.h (comments and whitespace removed) to the ABI version
// they were last checked with: a change to them fails here until the version and the fingerprint
// are updated together. (2026-11-23: three virtuals were inserted in the middle of Backend,
// upsample_conv2d_relu_forward and the two upsample_conv2d_backward*, without a bump.)
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "model/cuda_plugin_abi.h"
#include "support/test_support.h"

namespace ds::model {
namespace {

// The virtual declarations of class Backend, in order, one per line, comments dropped and
// whitespace collapsed: what decides the vtable (names of parameters included, which only costs
// a fingerprint update without a bump).
std::string backend_virtuals(const std::string& header) {
  std::ifstream in(header);
  std::string line, text;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind("class Backend {", 0) == 0) inside = true;
    if (!inside) continue;
    if (line.rfind("};", 0) == 0) break;
    const size_t comment = line.find("//");
    text += line.substr(0, comment) + " ";
  }
  std::string out;
  size_t at = 0;
  while ((at = text.find("virtual ", at)) != std::string::npos) {
    const size_t end = text.find_first_of(";{", at);
    std::istringstream words(text.substr(at, end - at));
    std::string w, decl;
    while (words >> w) decl += (decl.empty() ? "" : " ") + w;
    out += decl + "\n";
    at = end;
  }
  return out;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Not "*Cuda*": gpu_check.sh's parity filter runs the bundle's test_model, which has no sources.
TEST(PluginAbi, BackendVirtualsChangeOnlyWithTheAbiVersion) {
  const std::string header = test::source_dir() + "/model/backend.h";
  if (!std::ifstream(header)) GTEST_SKIP() << header << " not found: not a source tree (DS_SOURCE_DIR)";
  const std::string decls = backend_virtuals(header);
  ASSERT_GT(decls.size(), 1000u) << "model/backend.h not parsed";
  ASSERT_NE(decls.find("virtual void upsample_conv2d_backward("), std::string::npos) << decls;
  // Update both together: bump DS_CUDA_PLUGIN_ABI when the vtable changed (a virtual added,
  // removed, moved or its signature changed); the fingerprint alone when only a parameter name did.
  EXPECT_EQ(DS_CUDA_PLUGIN_ABI, 11);
  EXPECT_EQ(fnv1a(decls), 0x9cefc2f249f79ed6ull) << "model/backend.h's virtual functions changed: bump DS_CUDA_PLUGIN_ABI "
                                     "(model/cuda_plugin_abi.h) and set this fingerprint to the one above.\n"
                                  << decls;
}

}  // namespace
}  // namespace ds::model
