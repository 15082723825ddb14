# The kernel tests that need nothing but fpa_kernels, LibTorch and GoogleTest (and RapidCheck,
# where a test says so): included by tests/kernels.cmake and by the kernels-only build
# (cmake/KernelsOnly.cmake), which the GPU device check builds on a machine without the suite's
# other packages.
# The CUDA kernels (skipped with a reason unless LibTorch has CUDA and a GPU is present).
fpa_test(test_fused_cuda ${CMAKE_CURRENT_LIST_DIR}/test_fused_cuda.cpp)
# Which CUDA kernel impl 'cuda' runs for each dtype, head dimension and mode (no GPU needed).
fpa_test(test_cuda_dispatch ${CMAKE_CURRENT_LIST_DIR}/test_cuda_dispatch.cpp)
# The GPU kernels' tile algorithm (kernels/cuda/tile_*.h) run on the CPU in the GPU's order,
# against the float64 reference (no GPU needed). Its properties need RapidCheck, which the full
# build requires and the kernels-only build may lack.
if(TARGET rapidcheck)
  fpa_test(test_tile_algorithm ${CMAKE_CURRENT_LIST_DIR}/test_tile_algorithm.cpp)
  target_link_libraries(test_tile_algorithm PRIVATE rapidcheck)
endif()
# The tiled CUDA kernels on a GPU against the reference and the CPU tile run; built whenever nvcc
# and the CUDA runtime exist (raw device pointers, no CUDA LibTorch needed), skipped without a
# CUDA device.
find_package(CUDAToolkit QUIET)
if(TARGET fpa_cuda_kernels AND TARGET CUDA::cudart)
  fpa_test(test_tiled_cuda ${CMAKE_CURRENT_LIST_DIR}/test_tiled_cuda.cpp)
  target_link_libraries(test_tiled_cuda PRIVATE fpa_cuda_kernels)
endif()
# The same kernels' source run on the CPU (tests/cuda_emulation.h: a block's threads as
# fibers): needs the CUDA headers only, so it runs on machines without a GPU.
if(TARGET fpa_cuda_kernels AND TARGET CUDA::cudart)
  fpa_test(test_tiled_emulated ${CMAKE_CURRENT_LIST_DIR}/test_tiled_emulated.cpp)
  target_link_libraries(test_tiled_emulated PRIVATE fpa_cuda_kernels)
endif()
