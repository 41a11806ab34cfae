// run.communicator: which communicator carries training's collectives. mpi: the host (MPI)
// communicator, float collectives on host buffers. nccl: the CUDA plugin's NCCL communicator
// (model/cuda/nccl_communicator.cu) on top of the host one: gradients, weights and batch-norm
// buffers reduced on the GPU, host values (losses, votes, gathers) still through MPI. auto: nccl
// when training runs on GPUs, there is more than one rank and NCCL can be used on every rank,
// else mpi. Created after the backend, so each rank's GPU (from its local rank) is chosen first.
#pragma once
#include <memory>
#include <string>

#include "model/backend.h"
#include "train/distributed.h"

namespace ds {

// The checks of `choice` that need no collective (train --check makes them too): UsageError
// for a value other than auto, mpi or nccl, for nccl on a backend that is not a GPU's, and for
// nccl where NCCL cannot be used.
void check_communicator_choice(const std::string& choice, const model::Backend& be);

// nullptr: train with `host` itself. Collective over host's ranks. nccl where it cannot be used
// (the CPU backend, no libnccl, an old plugin) is a UsageError naming the key and the reason.
std::unique_ptr<Communicator> make_training_communicator(const std::string& choice, Communicator& host,
                                                         model::Backend& be, bool log);

}  // namespace ds
