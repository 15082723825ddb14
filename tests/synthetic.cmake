# Synthetic target-set tasks: generators and task files, a short training run, a tiny sweep.
fpa_test(test_synthetic test_synthetic_tasks.cpp test_synthetic_train.cpp test_synthetic_sweep.cpp)
target_link_libraries(test_synthetic PRIVATE fpa_synthetic)
target_compile_definitions(test_synthetic PRIVATE
  FPA_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
  FPA_SYNTHETIC_SWEEP="$<TARGET_FILE:synthetic-sweep>")
add_dependencies(test_synthetic synthetic-run synthetic-sweep)
# synthetic-sweep's study in-process, with a runner that fails at once.
fpa_test(test_synthetic_sweep_runner test_synthetic_sweep_runner.cpp)
target_link_libraries(test_synthetic_sweep_runner PRIVATE fpa_synthetic)
