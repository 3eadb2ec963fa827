// minijax MPI world: initialising and finalising MPI and the world's size and rank, the one place
// that includes mpi.h (jit/runtime/mpi_world.cc); in a build without MPI each function says so.
#pragma once
#include <string>

namespace minijax::mpi_world {

/// Whether this build links MPI (MINIJAX_WITH_MPI).
bool available();

/// MPI_COMM_WORLD as MPI_Init_thread left it.
struct World {
  int size = 1, rank = 0;
  /// "MPI_THREAD_MULTIPLE" or "MPI_THREAD_SERIALIZED".
  std::string thread_level;
};

/// MPI_Init_thread asking MPI_THREAD_MULTIPLE. Throws DistributedError in a build without MPI, or
/// when MPI grants less than MPI_THREAD_SERIALIZED (with it, only the communicator thread may call
/// MPI), naming what it granted.
World init();

/// MPI_Finalize, once; nothing where MPI was not initialised or is already finalised.
void finalize();

/// MPI_Initialized and MPI_Finalized (false, false in a build without MPI).
bool initialized();
bool finalized();

}  // namespace minijax::mpi_world
