# PyTorch tests (Python, run with FPA_PYTHON): torch.ops.fpa.* against plain PyTorch, and
# lm-export's state dicts rebuilt in PyTorch. They skip (exit 77) only when PyTorch is missing.
set(FPA_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with PyTorch for the Python tests")
if(TARGET fpa_torch_ops)
  add_test(NAME python_torch_ops
           COMMAND ${FPA_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/python/test_torch_ops.py
                   $<TARGET_FILE:fpa_torch_ops>)
  set_tests_properties(python_torch_ops PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
  # Double backward, non-finite scalars, the empty sequence, float32 fields far from 0.
  add_test(NAME python_torch_ops_edges
           COMMAND ${FPA_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/python/test_torch_ops_edges.py
                   $<TARGET_FILE:fpa_torch_ops>)
  set_tests_properties(python_torch_ops_edges PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  # The GPU benchmark's harness (kernels/bench/attention_gpu_bench.py --smoke): on the CPU, tiny
  # shapes; the CUDA-only baselines are skipped with their reasons. A few seconds.
  add_test(NAME python_attention_gpu_bench_smoke
           COMMAND ${FPA_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/python/test_attention_gpu_bench.py
                   $<TARGET_FILE:fpa_torch_ops>)
  set_tests_properties(python_attention_gpu_bench_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  # The plain-PyTorch training baseline (lm/python/train_speed.py --smoke): tiny model, CPU.
  add_test(NAME python_train_speed_smoke
           COMMAND ${FPA_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/python/test_train_speed.py
                   $<TARGET_FILE:fpa_torch_ops>)
  set_tests_properties(python_train_speed_smoke PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
if(TARGET fpa_torch_ops AND TARGET lm-export)
  add_test(NAME python_lm_export
           COMMAND ${FPA_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/python/test_lm_export.py
                   ${CMAKE_BINARY_DIR}/bin $<TARGET_FILE:fpa_torch_ops>)
  set_tests_properties(python_lm_export PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
