// minijax processes: mj::distributed::initialize/shutdown, process_index() and process_count()
// (core/distributed.h): the launcher's environment, the checks, and MPI through mpi_world.h.
#include "core/distributed.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/config.h"
#include "core/device.h"
#include "core/errors.h"
#include "jit/runtime/execute_spmd.h"
#include "jit/runtime/mpi_communicator.h"
#include "jit/runtime/mpi_world.h"

namespace minijax {

namespace {

struct State {
  std::mutex mu;
  bool initialized = false, shut_down = false, mpi = false;
  std::source_location initialized_at, shut_down_at;
  int count = 1, index = 0;
  std::string thread_level = "none";
};

State& state() {
  static auto* s = new State();  // never destroyed: read by the exit handler
  return *s;
}

// The run as the launcher describes it: its process count and this process's index, and the
// variables they came from (for messages).
struct Launcher {
  int size = 1, rank = 0;
  std::string size_var, rank_var;
};

int env_int(const char* var, const std::source_location& loc) {
  const char* v = std::getenv(var);
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || n < 0 || n > (1 << 24))
    throw DistributedError(std::string("mj::distributed::initialize: the launcher's ") + var + "='" + v +
                               "' is not a process count or index",
                           loc);
  return int(n);
}

// OpenMPI's mpirun exports OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK to each process; a PMI
// launcher (MPICH's Hydra, Slurm's srun --mpi=pmi2) PMI_SIZE and PMI_RANK.
std::optional<Launcher> launcher_of_environment(const std::source_location& loc) {
  for (auto [size_var, rank_var] :
       {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    if (!std::getenv(size_var) || !std::getenv(rank_var)) continue;
    Launcher l{env_int(size_var, loc), env_int(rank_var, loc), size_var, rank_var};
    if (l.size < 1 || l.rank >= l.size)
      throw DistributedError(std::string("mj::distributed::initialize: the launcher's ") + size_var + "=" +
                                 std::to_string(l.size) + " and " + rank_var + "=" + std::to_string(l.rank) +
                                 " do not describe a process of the run",
                             loc);
    return l;
  }
  return std::nullopt;
}

void check_arguments(std::optional<int> num_processes, std::optional<int> process_id,
                     std::optional<int> local_device_count, const std::source_location& loc) {
  if (num_processes && *num_processes < 1)
    throw ValueError("mj::distributed::initialize: num_processes = " + std::to_string(*num_processes) +
                         " is not a process count (an integer >= 1)",
                     loc);
  if (process_id && *process_id < 0)
    throw ValueError("mj::distributed::initialize: process_id = " + std::to_string(*process_id) +
                         " is negative",
                     loc);
  if (local_device_count && *local_device_count < 1)
    throw ValueError("mj::distributed::initialize: local_device_count = " +
                         std::to_string(*local_device_count) + " is not a device count (an integer >= 1)",
                     loc);
}

// The process count and index: the launcher's, checked against the arguments; without a
// launcher, one process.
Launcher run_of(std::optional<int> num_processes, std::optional<int> process_id,
                const std::source_location& loc) {
  const std::optional<Launcher> l = launcher_of_environment(loc);
  if (!l) {
    const int n = num_processes.value_or(1);
    if (n > 1)
      throw DistributedError("mj::distributed::initialize: num_processes = " + std::to_string(n) +
                                 " but no launcher started this process (no OMPI_COMM_WORLD_SIZE in its "
                                 "environment): start the program with `mpirun -np " +
                                 std::to_string(n) + " <program>`",
                             loc);
    if (process_id.value_or(0) != 0)
      throw DistributedError("mj::distributed::initialize: process_id = " + std::to_string(*process_id) +
                                 " but this process runs alone (no launcher): its index is 0",
                             loc);
    return Launcher{};
  }
  if (num_processes && *num_processes != l->size)
    throw DistributedError("mj::distributed::initialize: num_processes = " + std::to_string(*num_processes) +
                               " but the launcher started " + std::to_string(l->size) + " processes (" +
                               l->size_var + ")",
                           loc);
  if (process_id && *process_id != l->rank)
    throw DistributedError("mj::distributed::initialize: process_id = " + std::to_string(*process_id) +
                               " but the launcher made this process number " + std::to_string(l->rank) +
                               " (" + l->rank_var + ")",
                           loc);
  return *l;
}

}  // namespace

void distributed::initialize(std::optional<int> num_processes, std::optional<int> process_id,
                             std::optional<int> local_device_count, std::source_location loc) {
  check_arguments(num_processes, process_id, local_device_count, loc);
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.initialized)
    throw DistributedError("mj::distributed::initialize: already called, at " +
                               format_location(s.initialized_at),
                           loc);
  if (s.shut_down)
    throw DistributedError("mj::distributed::initialize: called after mj::distributed::shutdown() at " +
                               format_location(s.shut_down_at),
                           loc);
  if (const auto use = detail::first_device_use())
    throw DistributedError("mj::distributed::initialize: this process already used its devices, first at " +
                               format_location(*use) +
                               "; call initialize() before any computation (before devices(), a mesh, a "
                               "placement or a compiled call), as jax.distributed.initialize()",
                           loc);
  const Launcher run = run_of(num_processes, process_id, loc);
  if (run.size > 1) {
    if (!mpi_world::available())
      throw DistributedError("mj::distributed::initialize: " + std::to_string(run.size) +
                                 " processes, but this build of minijax has no MPI (the CMake option "
                                 "MINIJAX_WITH_MPI is OFF: install libopenmpi-dev, as setup.sh does, and "
                                 "configure again)",
                             loc);
    const mpi_world::World w = mpi_world::init();
    s.mpi = true;
    s.thread_level = w.thread_level;
    // Exit without shutdown() finalises MPI too (mpirun reports a process that exits without it as
    // failed). Registered before any compiled program's exit drains (execute_spmd.cc), so it runs
    // after them: no running call is left when MPI goes.
    std::atexit([] {
      drain_spmd_calls();
      stop_mpi_communicator();
      mpi_world::finalize();
    });
    if (w.size != run.size || w.rank != run.rank)
      throw DistributedError("mj::distributed::initialize: MPI's world has " + std::to_string(w.size) +
                                 " processes and makes this one number " + std::to_string(w.rank) +
                                 ", the launcher's environment says " + std::to_string(run.size) + " and " +
                                 std::to_string(run.rank),
                             loc);
  }
  if (local_device_count) config().num_cpu_devices = *local_device_count;
  s.count = run.size;
  s.index = run.rank;
  s.initialized = true;
  s.initialized_at = loc;
}

void distributed::shutdown(std::source_location loc) {
  State& s = state();
  bool mpi;
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.initialized) return;
    mpi = s.mpi;
  }
  if (mpi) {
    // Without the state's lock: the running calls ask process_index() while they finish.
    drain_spmd_calls();  // the running calls finish first, as at exit
    stop_mpi_communicator();
    mpi_world::finalize();
  }
  std::lock_guard<std::mutex> g(s.mu);
  s.initialized = false;
  s.shut_down = true;
  s.shut_down_at = loc;
}

bool distributed::is_initialized() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  return s.initialized;
}

std::string distributed::mpi_thread_level() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  return s.thread_level;
}

bool distributed::built_with_mpi() { return mpi_world::available(); }

int process_index() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  return s.index;
}

int process_count() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  return s.count;
}

}  // namespace minijax
