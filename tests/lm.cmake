# Language-model area tests (lm/): corpus, tokenizer, model, training (resume, NaN), provenance
# sidecars, 2-rank data parallelism.
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
  # The tokenizer (lm/tokenizer.h): SentencePiece on a generated corpus, without LibTorch (the two
  # cannot share a process, lm/sentencepiece_tokenizer.h); the bytes kind against corpus.h's byte
  # tokens with LibTorch (fpa_lm_corpus) but not the models.
  add_executable(test_lm_tokenizer ${_lm}/test_lm_tokenizer.cpp)
  target_link_libraries(test_lm_tokenizer PRIVATE fpa_lm_sentencepiece GTest::gtest_main)
  add_executable(test_lm_tokenizer_bytes ${_lm}/test_lm_tokenizer_bytes.cpp)
  target_link_libraries(test_lm_tokenizer_bytes PRIVATE fpa_lm_tokenizer fpa_lm_corpus
                        GTest::gtest_main)
  foreach(t test_lm_tokenizer test_lm_tokenizer_bytes)
    set_target_properties(${t} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    gtest_discover_tests(${t} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 900)
  endforeach()
  # The SentencePiece module opened beside LibTorch (dlopen, RTLD_DEEPBIND) and the corpus's
  # sub-word tensors; the module is a dependency of fpa_lm, so it is built with the test.
  fpa_test(test_lm_sentencepiece_module ${_lm}/test_lm_sentencepiece_module.cpp)
  target_link_libraries(test_lm_sentencepiece_module PRIVATE fpa_lm)
  # A preset is one file: one added at run time trains (FPA_PRESET_DIR).
  add_test(NAME lm_preset_is_a_file
           COMMAND ${CMAKE_SOURCE_DIR}/tests/preset_is_a_file.sh ${CMAKE_BINARY_DIR}/bin ${CMAKE_SOURCE_DIR})
endif()
# PROFILE=paper-smoke through lm/reproduce.sh on a generated corpus, and the sub-word tokenizer's
# refusals (about 15 s).
if(TARGET lm-train AND TARGET lm-eval)
  add_test(NAME lm_paper_smoke
           COMMAND ${CMAKE_SOURCE_DIR}/tests/lm_paper_smoke.sh ${CMAKE_BINARY_DIR}/bin ${CMAKE_SOURCE_DIR})
  set_tests_properties(lm_paper_smoke PROPERTIES TIMEOUT 300)
endif()
# Language-model compression (lm/compress): the compressed-cache loss against the model's own.
if(TARGET fpa_lm_compress)
  fpa_test(test_lm_compress ${CMAKE_CURRENT_LIST_DIR}/test_lm_compress.cpp)
  target_link_libraries(test_lm_compress PRIVATE fpa_lm_compress)
endif()
# lm/reproduce.sh with stub binaries: runs, skipping, weights required beyond quick, failures.
add_test(NAME lm_reproduce_script COMMAND ${CMAKE_SOURCE_DIR}/tests/lm_reproduce_script.sh)
# The GPU device build of lm-train and lm-eval (cmake/DeviceLm.cmake) configures from vendored
# packages alone (scripts/prepare-device-check.sh into a temporary folder; about 20 s).
add_test(NAME device_lm_configure COMMAND ${CMAKE_CURRENT_LIST_DIR}/device_lm_configure.sh)
set_tests_properties(device_lm_configure PROPERTIES TIMEOUT 300)
