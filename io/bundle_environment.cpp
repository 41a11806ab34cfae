#include "io/bundle_environment.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "io/executable_dir.h"

namespace ds {

namespace {

// The bundle's top folder (bin/..), resolved; "" when the program does not lie in a bundle.
std::string bundle_root() {
  const std::string bin = executable_dir();
  if (bin.empty() || access((bin + "/env.sh").c_str(), X_OK) != 0) return "";
  char resolved[PATH_MAX];
  return realpath((bin + "/..").c_str(), resolved) ? std::string(resolved) : "";
}

// As env.sh's ${NAME:-value}: an empty value counts as unset (udunits would fail on "").
void set_if_unset(const char* name, const std::string& value) {
  const char* now = getenv(name);
  if (!now || !*now) setenv(name, value.c_str(), 1);
}

}  // namespace

bool bundle_without_env_sh() { return !getenv("DOWNSCALE_BUNDLE") && !bundle_root().empty(); }

void adopt_bundle_environment() {
  const std::string root = bundle_root();
  if (root.empty() || getenv("DOWNSCALE_BUNDLE")) return;  // not a bundle, or env.sh ran
  const auto has = [&](const char* relative) { return access((root + relative).c_str(), F_OK) == 0; };
  if (has("/share/udunits/udunits2.xml")) set_if_unset("UDUNITS2_XML_PATH", root + "/share/udunits/udunits2.xml");
  if (has("/lib/x86_64-linux-gnu/openmpi/lib/openmpi3")) {
    // Always, as env.sh: the libmpi loaded is the bundle's (RPATH), and a site module's
    // OPAL_PREFIX (NVHPC, HPC-X) would send it to another Open MPI's components.
    setenv("OPAL_PREFIX", root.c_str(), 1);
    set_if_unset("OMPI_MCA_ess_singleton_isolated", "1");
  }
  if (has("/share/natural_earth")) set_if_unset("DOWNSCALE_NATURAL_EARTH", root + "/share/natural_earth");
}

}  // namespace ds
