// minijax MPI world: MPI_Init_thread, MPI_Finalize and the world's size and rank (mpi_world.h).
// The only file that includes mpi.h; compiled with MINIJAX_WITH_MPI when cmake found MPI.
#include "jit/runtime/mpi_world.h"

#include "core/errors.h"

#ifdef MINIJAX_WITH_MPI
// MPI's C interface only: without these, OpenMPI's and MPICH's mpi.h pull in their deprecated C++
// bindings, which would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace minijax::mpi_world {

#ifdef MINIJAX_WITH_MPI

bool available() { return true; }

World init() {
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS)
    throw DistributedError("MPI_Init_thread failed with error code " + std::to_string(rc));
  if (provided < MPI_THREAD_SERIALIZED)
    throw DistributedError(
        "MPI granted thread level " + std::to_string(provided) +
        " (MPI_THREAD_SINGLE or MPI_THREAD_FUNNELED); minijax needs MPI_THREAD_SERIALIZED at least");
  World w;
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  w.thread_level = provided >= MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_SERIALIZED";
  return w;
}

void finalize() {
  if (initialized() && !finalized()) MPI_Finalize();
}

bool initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

bool finalized() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

#else

bool available() { return false; }

World init() {
  throw DistributedError(
      "this build of minijax has no MPI (the CMake option MINIJAX_WITH_MPI is OFF: install "
      "libopenmpi-dev, as setup.sh does, and configure again)");
}

void finalize() {}
bool initialized() { return false; }
bool finalized() { return false; }

#endif

}  // namespace minijax::mpi_world
