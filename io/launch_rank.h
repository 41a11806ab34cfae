// The rank an MPI or Slurm launcher gave this process, from the launchers' own environment
// (Open MPI, PMIx, PMI, srun), for what runs before MPI starts or without it: the config's
// warnings said once a job, the test hook that waits for a signal on one rank.
#pragma once

namespace ds {

// "0", "1", ...; nullptr when no launcher started this process.
const char* launch_rank();

}  // namespace ds
