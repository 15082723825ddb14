# Fused CPU kernels against the float64 reference (unit cases + a RapidCheck property), and the
# CUDA kernels (skipped with a reason unless LibTorch has CUDA and a GPU is present).
fpa_test(test_fused test_fused.cpp test_fused_properties.cpp test_impl_choice.cpp)
fpa_test(test_fused_cuda test_fused_cuda.cpp)
# The cached entry point (kernels/cpu/kv_cache.h): decoding with evictions equals the full operator
# restricted to the kept keys, for every variant and implementation.
fpa_test(test_kv_cache test_kv_cache.cpp)
# attention-bench's study in-process on tiny problems.
fpa_test(test_attention_bench test_attention_bench.cpp)
target_link_libraries(test_attention_bench PRIVATE fpa_attention_bench)
# The GPU kernels' tile algorithm (kernels/cuda/tile_*.h) run on the CPU in the GPU's order,
# against the float64 reference (no GPU needed).
fpa_test(test_tile_algorithm test_tile_algorithm.cpp)
# The tiled CUDA kernels on a GPU against the reference and the CPU tile run; built whenever nvcc
# and the CUDA runtime exist (raw device pointers, no CUDA LibTorch needed), skipped without a
# CUDA device.
find_package(CUDAToolkit QUIET)
if(TARGET fpa_cuda_kernels AND TARGET CUDA::cudart)
  fpa_test(test_tiled_cuda test_tiled_cuda.cpp)
  target_link_libraries(test_tiled_cuda PRIVATE fpa_cuda_kernels)
endif()
# The same kernels' source run on the CPU (tests/cuda_emulation.h: a block's threads as
# fibers): needs the CUDA headers only, so it runs on machines without a GPU.
if(TARGET fpa_cuda_kernels AND TARGET CUDA::cudart)
  fpa_test(test_tiled_emulated test_tiled_emulated.cpp)
  target_link_libraries(test_tiled_emulated PRIVATE fpa_cuda_kernels)
endif()
