# minijax dependencies: Debian's xtensor (host arrays) and the GEMM libraries.
# oneDNN's dnnl_sgemm for f32 (measured 2x OpenBLAS on the MLP step), OpenBLAS's cblas_dgemm for f64.
find_package(xtensor REQUIRED)
find_library(DNNL_LIB NAMES dnnl REQUIRED)
find_path(DNNL_INCLUDE oneapi/dnnl/dnnl.h REQUIRED)
find_library(OPENBLAS_LIB NAMES openblas REQUIRED)
find_path(CBLAS_INCLUDE cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas REQUIRED)
set(MINIJAX_GEMM_LIBS ${DNNL_LIB} ${OPENBLAS_LIB})
set(MINIJAX_GEMM_INCLUDES ${DNNL_INCLUDE} ${CBLAS_INCLUDE})
