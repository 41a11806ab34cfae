// A bundle's bin/downscale started without bin/env.sh (scripts/bundle.sh): what env.sh would have
// exported for this process, taken from the folders beside the program. Without it, on a machine
// without Debian's packages, udunits finds no unit database and MPI_Init no Open MPI components,
// and neither error points to env.sh.
#pragma once

namespace ds {

// Sets UDUNITS2_XML_PATH, OMPI_MCA_ess_singleton_isolated=1 (a rank started alone needs no
// daemon) and DOWNSCALE_NATURAL_EARTH to the bundle's copies where the variable is unset or
// empty, and OPAL_PREFIX to the bundle always, as env.sh does; each only where the bundle's file
// is there: a build tree or a Debian install is left as it is. Call before anything reads them (MPI_Init included). What env.sh adds to the library path
// (a PyTorch installation's CUDA libraries) cannot be added from inside the process.
void adopt_bundle_environment();

// True when this program lies in a bundle (bin/env.sh beside it) that was started without it.
bool bundle_without_env_sh();

}  // namespace ds
