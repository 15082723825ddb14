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
message(STATUS "FPA: nvcc=${FPA_HAVE_NVCC} torch-cuda=${FPA_TORCH_HAS_CUDA}")
