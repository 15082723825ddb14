# Language-model area tests (lm/): corpus, model, training (resume, NaN), provenance sidecars,
# 2-rank data parallelism.
if(TARGET fpa_lm)
  set(_lm ${CMAKE_CURRENT_LIST_DIR})
  fpa_test(test_lm ${_lm}/test_lm_corpus.cpp ${_lm}/test_lm_model.cpp ${_lm}/test_lm_train.cpp
           ${_lm}/test_lm_settings.cpp ${_lm}/test_lm_provenance.cpp ${_lm}/test_lm_util.cpp)
  target_link_libraries(test_lm PRIVATE fpa_lm)
  # lm-eval's study in-process on a micro model and a generated corpus.
  fpa_test(test_lm_eval_study ${_lm}/test_lm_eval_study.cpp ${_lm}/test_lm_util.cpp)
  target_link_libraries(test_lm_eval_study PRIVATE fpa_lm_eval_study)
  # The 2-rank check runs the real launcher: lm-train --nproc 2.
  fpa_test(test_lm_parallel ${_lm}/test_lm_parallel.cpp ${_lm}/test_lm_util.cpp)
  target_link_libraries(test_lm_parallel PRIVATE fpa_lm)
  target_compile_definitions(test_lm_parallel PRIVATE LM_TRAIN_PATH="$<TARGET_FILE:lm-train>")
  add_dependencies(test_lm_parallel lm-train)
  # A preset is one file: one added at run time trains (FPA_PRESET_DIR).
  add_test(NAME lm_preset_is_a_file
           COMMAND ${CMAKE_SOURCE_DIR}/tests/preset_is_a_file.sh ${CMAKE_BINARY_DIR}/bin ${CMAKE_SOURCE_DIR})
endif()
# Language-model compression (lm/compress): the compressed-cache loss against the model's own.
if(TARGET fpa_lm_compress)
  fpa_test(test_lm_compress ${CMAKE_CURRENT_LIST_DIR}/test_lm_compress.cpp)
  target_link_libraries(test_lm_compress PRIVATE fpa_lm_compress)
endif()
# lm/reproduce.sh with stub binaries: runs, skipping, weights required beyond quick, failures.
add_test(NAME lm_reproduce_script COMMAND ${CMAKE_SOURCE_DIR}/tests/lm_reproduce_script.sh)
