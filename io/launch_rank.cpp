#include "io/launch_rank.h"

#include <cstdlib>
#include <initializer_list>

namespace ds {

const char* launch_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* rank = std::getenv(var)) return rank;
  return nullptr;
}

}  // namespace ds
