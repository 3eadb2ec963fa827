// minijax MPI world: initialising and finalising MPI and the world's size and rank, the one place
// that includes mpi.h (jit/runtime/mpi_world.cc); in a build without MPI each function says so.
#pragma once
#include <cstdint>
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

/// One non-blocking message (an MPI_Request, opaque here) on the runtime's own duplicate of
/// MPI_COMM_WORLD, whose errors return rather than abort.
struct Request {
  alignas(8) unsigned char handle[16] = {};
  bool active = false;
  bool cancelled = false;
};

/// The largest tag (MPI_TAG_UB of the runtime's communicator).
int tag_upper_bound();
/// MPI_Isend / MPI_Irecv of `bytes` bytes (<= INT_MAX: callers split larger messages) to or from
/// process `peer` (a receive from peer -1: from any process) with `tag`. DistributedError when MPI
/// refuses.
Request isend(const void* data, int64_t bytes, int peer, int tag);
Request irecv(void* data, int64_t bytes, int peer, int tag);
/// MPI_Test: whether `r` completed (then it is inactive). For a receive, `*received` is the
/// byte count MPI_Get_count reports. `*error` is MPI's error text for a failed request (then
/// true is returned), else empty.
bool test(Request& r, int64_t* received, std::string* error);
/// MPI_Cancel (once): the request stays active until test() reports it completed (cancelled,
/// or matched before the cancel took: its buffer is in use until then). Nothing for an inactive
/// request.
void cancel(Request& r);
/// MPI_Cancel then MPI_Request_free: MPI forgets the request, whose buffer must then outlive the
/// process's use of MPI (for what is left at shutdown). Nothing for an inactive request.
void release(Request& r);
/// MPI_Barrier over every process (blocking; for tests and shutdown).
void barrier();

}  // namespace minijax::mpi_world
