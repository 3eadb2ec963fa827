// minijax MPI world: MPI_Init_thread, MPI_Finalize and the world's size and rank (mpi_world.h).
// The only file that includes mpi.h; compiled with MINIJAX_WITH_MPI when cmake found MPI.
#include "jit/runtime/mpi_world.h"

#include <climits>
#include <cstring>

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

namespace {
MPI_Comm g_comm = MPI_COMM_NULL;  // the runtime's duplicate of MPI_COMM_WORLD (errors return)

MPI_Request& req(Request& r) {
  static_assert(sizeof(MPI_Request) <= sizeof(Request::handle), "MPI_Request does not fit Request");
  return *reinterpret_cast<MPI_Request*>(r.handle);
}

std::string error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, size_t(len));
}

void check_count(int64_t bytes, const char* what) {
  if (bytes < 0 || bytes > INT_MAX)
    throw DistributedError(std::string(what) + " of " + std::to_string(bytes) +
                           " bytes: a message holds at most " + std::to_string(INT_MAX));
}
}  // namespace

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
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
  return w;
}

int tag_upper_bound() {
  void* v = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
  return flag && v ? *static_cast<int*>(v) : 32767;  // the standard's guaranteed minimum
}

Request isend(const void* data, int64_t bytes, int peer, int tag) {
  check_count(bytes, "MPI_Isend");
  Request r;
  const int rc = MPI_Isend(data, int(bytes), MPI_BYTE, peer, tag, g_comm, &req(r));
  if (rc != MPI_SUCCESS)
    throw DistributedError("MPI_Isend to process " + std::to_string(peer) + ": " + error_text(rc));
  r.active = true;
  return r;
}

Request irecv(void* data, int64_t bytes, int peer, int tag) {
  check_count(bytes, "MPI_Irecv");
  Request r;
  const int rc = MPI_Irecv(data, int(bytes), MPI_BYTE, peer < 0 ? MPI_ANY_SOURCE : peer, tag, g_comm,
                           &req(r));
  if (rc != MPI_SUCCESS)
    throw DistributedError("MPI_Irecv from process " + std::to_string(peer) + ": " + error_text(rc));
  r.active = true;
  return r;
}

bool test(Request& r, int64_t* received, std::string* error) {
  error->clear();
  if (!r.active) return true;
  int flag = 0;
  MPI_Status st;
  std::memset(&st, 0, sizeof st);
  const int rc = MPI_Test(&req(r), &flag, &st);
  if (rc != MPI_SUCCESS || (flag && st.MPI_ERROR != MPI_SUCCESS && st.MPI_ERROR != 0)) {
    *error = error_text(rc != MPI_SUCCESS ? rc : st.MPI_ERROR);
    r.active = false;
    return true;
  }
  if (!flag) return false;
  r.active = false;
  if (received) {
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    *received = count;
  }
  return true;
}

void cancel(Request& r) {
  if (!r.active || r.cancelled) return;
  MPI_Cancel(&req(r));
  r.cancelled = true;
}

void release(Request& r) {
  if (!r.active) return;
  cancel(r);
  MPI_Request_free(&req(r));
  r.active = false;
}

void barrier() { MPI_Barrier(g_comm); }

void finalize() {
  if (!initialized() || finalized()) return;
  if (g_comm != MPI_COMM_NULL) MPI_Comm_free(&g_comm);
  MPI_Finalize();
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

namespace {
[[noreturn]] void no_mpi() {
  init();
  throw DistributedError("no MPI");
}
}  // namespace
int tag_upper_bound() { no_mpi(); }
Request isend(const void*, int64_t, int, int) { no_mpi(); }
Request irecv(void*, int64_t, int, int) { no_mpi(); }
bool test(Request&, int64_t*, std::string*) { no_mpi(); }
void cancel(Request&) {}
void release(Request&) {}
void barrier() { no_mpi(); }

#endif

}  // namespace minijax::mpi_world
