// Every rank of a job starts training from the same point.
//
// Each rank decides for itself whether it resumes (--resume-auto: checkpoint_last.h5 found or not)
// and reads its own copy of the training state (epoch, step, shuffle, optimizer steps, best loss,
// loss scale, run); broadcast_state then shares the tensors alone. Ranks reading different
// folders (run.dir on node-local disks, another working folder) trained on from different points:
// other epochs' shuffles, so shards neither disjoint nor complete, with checkpoints written for
// epochs rank 0 alone had, until collectives of different sizes corrupted memory (2026-11-30, a
// review: rank 0 died in free() with no word of why).
#pragma once

#include <cstdint>
#include <string>

#include "train/checkpoint.h"
#include "train/distributed.h"

namespace ds {

// Refuses (InputError, exit 3) on rank 0, before any collective that depends on them, a job whose
// ranks read different stores under one path (a node-local copy, a link, another working folder:
// they trained on other samples without a word, and the checkpoint recorded rank 0's store alone)
// or different configs (another file, another --set, as an MPMD launch or a wrapper script can
// give: models of other shapes then exchanged gradients of other sizes, and a rank died of
// SIGABRT in MPI with no word of why; 2026-11-30). Names the first rank that differs from rank 0,
// and for the config the first line that differs. store_fingerprint: the store's identity and
// content hash; config_record: Config::record, the file's text and the --set overrides.
void check_ranks_read_alike(Communicator& comm, const std::string& store_path, const std::string& store_fingerprint,
                            const std::string& config_file, const std::string& config_record);

// Refuses (InputError, exit 3) on rank 0, before any other collective that depends on resuming,
// a job whose ranks start from different training states, naming the first rank that differs
// from rank 0 and both starting points. `checkpoint`: the path of checkpoint_last.h5.
void check_ranks_start_alike(Communicator& comm, bool resume, const TrainState& state, int64_t optimizer_steps,
                             const std::string& checkpoint);

}  // namespace ds
