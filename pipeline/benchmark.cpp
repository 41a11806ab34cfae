// Driver of `downscale benchmark`: one process, or one rank of `mpirun -np N downscale
// benchmark ...` / `srun ... downscale benchmark ...` (train/benchmark.h does the work).
// No config file: everything is an option, as in the reference script. With --plot it only
// draws a scaling figure from a JSON-lines file (pipeline/benchmark_plot.cpp).
#include <spdlog/spdlog.h>

#include <iostream>

#include "io/error.h"
#include "io/log.h"
#include "io/stop_signal.h"
#include "pipeline/stages.h"
#include "train/benchmark.h"
#include "train/benchmark_model.h"
#include "train/distributed.h"

namespace ds {

int run_benchmark_command(const BenchmarkOptions& opts, const std::string& log_level) {
  // Fails before MPI_Init on a bad name, once and not once per rank.
  (void)benchmark_default_image_size(opts.model);
  const auto comm = make_mpi_communicator();
  if (comm->size() > 1) setup_logging("benchmark", log_level, comm->rank());  // every line names its rank
  run_or_abort_job(*comm, [&] { run_benchmark(opts, *comm, std::cout); });
  return 0;
}

}  // namespace ds
