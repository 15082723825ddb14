# Fused CPU kernels against the float64 reference (unit cases + a RapidCheck property).
fpa_test(test_fused test_fused.cpp test_fused_properties.cpp test_impl_choice.cpp)
# The cached entry point (kernels/cpu/kv_cache.h): decoding with evictions equals the full operator
# restricted to the kept keys, for every variant and implementation.
fpa_test(test_kv_cache test_kv_cache.cpp)
# attention-bench's study in-process on tiny problems.
fpa_test(test_attention_bench test_attention_bench.cpp)
target_link_libraries(test_attention_bench PRIVATE fpa_attention_bench)
# The tests that need only the kernels (the kernels-only build runs them too).
include(${CMAKE_CURRENT_LIST_DIR}/kernels_device.cmake)
# The kernels-only build (cmake/KernelsOnly.cmake) configures and builds its CPU tests without
# the suite's packages.
add_test(NAME kernels_only_build COMMAND ${CMAKE_CURRENT_LIST_DIR}/kernels_only_build.sh)
set_tests_properties(kernels_only_build PROPERTIES TIMEOUT 900)
