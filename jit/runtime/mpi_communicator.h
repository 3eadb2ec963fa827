// minijax MPI communicator: the Communicator of a run of several processes. Groups inside this
// process stay on the in-process backend; a group spanning processes goes hierarchically over MPI.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "jit/runtime/communicator.h"

namespace minijax {

/// The communicator of a run of several processes (mj::distributed::initialize, after MPI is
/// initialised). A collective whose group lies in this process runs on an InProcessCommunicator
/// (shared memory, as in a run of one process). One whose group spans processes is gathered on
/// this process until its local members have all started, then run by the communicator's own
/// thread hierarchically (collective_wire.h): the local part first (a partial reduction for
/// all_reduce and reduce_scatter), then one message per process pair, preceded by a 512-byte
/// header naming the collective (so a disagreement or a peer's failure is an error, never a
/// wrong result), then the local results. That thread alone calls MPI (so
/// MPI_THREAD_SERIALIZED suffices); it never calls MPI_Wait: it polls with MPI_Test, sleeping
/// 20 µs doubling to 1 ms while nothing completes (while every peer's header has arrived, so data
/// is flowing, it yields instead of sleeping). A collective whose peers have not all sent their
/// header within config().collective_timeout_s seconds fails with DistributedError naming the
/// collective, this process and the missing ones; after that, or after an abort that reached a
/// collective between processes, the processes no longer agree on what was exchanged, so every
/// later collective between processes fails with that error (restart the run, as after a failure
/// of a multi-host JAX program). Bytes: each local device's counters (collective_stats) count the
/// copies between local devices and its share of each message; collective_process_stats counts
/// each message's bytes per process pair.
std::unique_ptr<Communicator> make_mpi_communicator();

/// Every listed process's `text` (processes: ascending process indices, this one among them),
/// gathered by a collective of the runtime's own between their first devices, numbered apart from
/// the programs' collectives; every listed process must call it with a text of the same length
/// (else a ValueError: the participants disagree). `text` alone where there is no MPI
/// communicator or one process. DistributedError as a collective between processes.
std::vector<std::string> exchange_texts(const std::string& text, const std::vector<int>& processes);

/// Stops the MPI communicator's thread (pending collectives between processes fail with
/// DistributedError) so that MPI can be finalised; nothing if there is none. Called by
/// mj::distributed::shutdown() and at exit before MPI_Finalize.
void stop_mpi_communicator();

}  // namespace minijax
