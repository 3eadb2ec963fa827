// minijax processes: mj::distributed::initialize and shutdown (jax.distributed's), process_index()
// and process_count(). jit/runtime/distributed.cc implements them; MPI is in jit/runtime/mpi_world.cc.
#pragma once
#include <optional>
#include <source_location>
#include <string>

namespace minijax {
namespace distributed {

/// Joins this process to the run `mpirun -np N` started, as jax.distributed.initialize(): reads the
/// process count and this process's index from the launcher's environment (OpenMPI's
/// OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK; PMI_SIZE and PMI_RANK of a PMI launcher). The
/// arguments only check what the launcher set (`num_processes`, `process_id`: a mismatch is a
/// DistributedError naming both values) or set this process's device count
/// (`local_device_count`, as config().num_cpu_devices does). Without a launcher the run is one
/// process (`num_processes` absent or 1). With more than one process it initialises MPI
/// (MPI_Init_thread asking MPI_THREAD_MULTIPLE: mpi_thread_level() says what it got) and
/// registers MPI_Finalize at exit; with one it never calls MPI.
/// Throws DistributedError when called twice or after shutdown() (naming the earlier call's line);
/// after this process used its devices (devices(), a mesh, a placement or a compiled call; naming
/// that first use's line), as JAX requires initialize() before any computation; for more than one
/// process without a launcher (saying to start the program with `mpirun -np N`) or in a build
/// without MPI (MINIJAX_WITH_MPI off); when MPI's world disagrees with the launcher's environment.
/// ValueError for a count below 1 or a negative index.
/// Source: jax/_src/distributed.py initialize (its num_processes, process_id and local_device_ids,
/// the launcher's environment read as its cluster auto-detection does).
void initialize(std::optional<int> num_processes = std::nullopt, std::optional<int> process_id = std::nullopt,
                std::optional<int> local_device_count = std::nullopt,
                std::source_location loc = std::source_location::current());

/// Leaves the run (jax/_src/distributed.py shutdown): MPI_Finalize where initialize() initialised MPI. Without initialize(), or a
/// second time, it does nothing (as jax.distributed.shutdown()); initialize() after it is a
/// DistributedError.
void shutdown(std::source_location loc = std::source_location::current());

/// Whether initialize() has run and shutdown() has not.
bool is_initialized();

/// The thread support MPI granted: "MPI_THREAD_MULTIPLE", "MPI_THREAD_SERIALIZED" (then only the
/// communicator thread calls MPI), or "none" where MPI was not initialised (one process).
std::string mpi_thread_level();

/// Whether this build has MPI (the CMake option MINIJAX_WITH_MPI).
bool built_with_mpi();

}  // namespace distributed

/// This process's index in [0, process_count()) (jax.process_index()); 0 before initialize().
int process_index();
/// The number of processes of the run (jax.process_count()); 1 before initialize().
int process_count();

}  // namespace minijax
