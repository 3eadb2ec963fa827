# minijax dependencies: Debian's xtensor (host arrays), the GEMM libraries, LLVM, oneTBB and zlib.
# oneDNN's dnnl_sgemm for f32 (measured 2x OpenBLAS on the MLP step), OpenBLAS's cblas_dgemm for f64.
find_package(xtensor REQUIRED)
find_library(DNNL_LIB NAMES dnnl REQUIRED)
find_path(DNNL_INCLUDE oneapi/dnnl/dnnl.h REQUIRED)
# OpenBLAS single-threaded (Debian's libopenblas-serial-dev): minijax's threads are its devices and
# oneTBB's pool; OpenBLAS's pthread flavour adds worker threads that spin ~0.1 s after every call
# (and after load), which the no-busy-wait test of the multi-device runtime caught. The serial
# library is found in its own folder and that folder is put in minijax's run path, since the
# system-wide libopenblas.so.0 is whichever flavour Debian's alternatives chose.
find_library(OPENBLAS_SERIAL_LIB NAMES openblas PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-serial
             NO_DEFAULT_PATH REQUIRED)
get_filename_component(MINIJAX_OPENBLAS_DIR ${OPENBLAS_SERIAL_LIB} DIRECTORY)
find_path(CBLAS_SERIAL_INCLUDE cblas.h PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-serial NO_DEFAULT_PATH
          REQUIRED)
set(MINIJAX_GEMM_LIBS ${DNNL_LIB} ${OPENBLAS_SERIAL_LIB})
set(MINIJAX_GEMM_INCLUDES ${DNNL_INCLUDE} ${CBLAS_SERIAL_INCLUDE})

# LLVM 19 (Debian's llvm-19-dev): the code generator behind jit (ORC LLJIT), linked as the one
# shared libLLVM. oneTBB (libtbb-dev): the thread pool kernels run on.
find_package(LLVM REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "minijax needs LLVM 19 (Debian's llvm-19-dev), found ${LLVM_PACKAGE_VERSION} at ${LLVM_DIR}")
endif()
separate_arguments(LLVM_DEFINITIONS_LIST NATIVE_COMMAND ${LLVM_DEFINITIONS})
if(LLVM_LINK_LLVM_DYLIB)
  set(MINIJAX_LLVM_LIBS LLVM)
else()
  llvm_map_components_to_libnames(MINIJAX_LLVM_LIBS orcjit native passes)
endif()
find_package(TBB REQUIRED)
# zlib (Debian's zlib1g-dev): deflate and CRC-32 for .npz archives (io/zip.cc), gzip'd IDX files (samples).
find_package(ZLIB REQUIRED)

# MPI (Debian's OpenMPI 4.1, libopenmpi-dev): several processes started by mpirun
# (mj::distributed, jit/runtime/mpi_world.cc). MINIJAX_WITH_MPI defaults to whether it is found;
# without it the library builds and runs single-process, and initialize() of more processes
# says the build has no MPI.
find_package(MPI COMPONENTS C QUIET)
option(MINIJAX_WITH_MPI "Build the multi-process runtime over MPI (mpirun)" ${MPI_C_FOUND})
if(MINIJAX_WITH_MPI AND NOT MPI_C_FOUND)
  message(FATAL_ERROR "MINIJAX_WITH_MPI is ON but cmake found no MPI: install libopenmpi-dev (setup.sh does)")
endif()
message(STATUS "minijax: MINIJAX_WITH_MPI=${MINIJAX_WITH_MPI}")
