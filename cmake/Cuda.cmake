# CUDA sources are compiled whenever a CUDA compiler exists (so they never rot);
# the LibTorch bindings only when LibTorch itself was built with CUDA.
include(CheckLanguage)
check_language(CUDA)
set(FPA_HAVE_NVCC OFF)
if(CMAKE_CUDA_COMPILER)
  enable_language(CUDA)
  set(FPA_HAVE_NVCC ON)
endif()
set(FPA_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR CUDA_FOUND OR TORCH_CUDA_LIBRARIES)
  set(FPA_TORCH_HAS_CUDA ON)
endif()
# An nvcc that cannot compile CMake's test program (a host compiler newer than it supports, or a
# C library whose math declarations clash with its headers) is skipped by check_language without
# a word: say so, since the CUDA kernels and impl cuda are then left out.
if(NOT FPA_HAVE_NVCC)
  find_program(FPA_NVCC_PRESENT nvcc PATHS /usr/local/cuda/bin)
  if(FPA_NVCC_PRESENT)
    message(WARNING "FPA: ${FPA_NVCC_PRESENT} cannot compile a test program with this host "
                    "compiler and C library (CMake's check output is under CMakeFiles/), so the "
                    "CUDA kernels are left out; -DCMAKE_CUDA_HOST_COMPILER=<a g++ it supports> "
                    "may help")
  endif()
endif()
message(STATUS "FPA: nvcc=${FPA_HAVE_NVCC} torch-cuda=${FPA_TORCH_HAS_CUDA}")
