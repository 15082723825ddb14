# Passkey area tests (lm/passkey, lm/decode). Prompts and policies are pure logic; the decoding
# test compares token-by-token decoding with the full forward pass on a tiny random model.
if(NOT TARGET fpa_passkey_core AND EXISTS ${CMAKE_SOURCE_DIR}/lm/passkey/CMakeLists.txt)
  # lm/CMakeLists.txt adds lm/passkey; until it does, add it from here.
  add_subdirectory(${CMAKE_SOURCE_DIR}/lm/passkey ${CMAKE_BINARY_DIR}/lm/passkey)
endif()
if(TARGET fpa_passkey_core)
  fpa_test(test_passkey_logic test_passkey_prompt.cpp test_cache_policy.cpp)
  target_link_libraries(test_passkey_logic PRIVATE fpa_passkey_core)
endif()
# Prompts in a SentencePiece model's tokens, trained in the test: without LibTorch, which cannot
# share a process with SentencePiece linked in (lm/sentencepiece_tokenizer.h).
if(TARGET fpa_passkey_core AND TARGET fpa_lm_sentencepiece)
  add_executable(test_passkey_token_prompt test_passkey_token_prompt.cpp)
  target_link_libraries(test_passkey_token_prompt PRIVATE fpa_passkey_core fpa_lm_sentencepiece
                        GTest::gtest_main)
  set_target_properties(test_passkey_token_prompt PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gtest_discover_tests(test_passkey_token_prompt DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 900)
endif()
if(TARGET fpa_passkey)
  fpa_test(test_passkey_decode test_passkey_decode.cpp)
  target_link_libraries(test_passkey_decode PRIVATE fpa_passkey)
  # passkey-eval's and passkey-probe's studies in-process on a tiny random model.
  fpa_test(test_passkey_studies test_passkey_studies.cpp test_lm_util.cpp)
  target_link_libraries(test_passkey_studies PRIVATE fpa_passkey)
  # The one trainer with passkey-train's task (lm-train's is in test_lm_train).
  fpa_test(test_trainer test_trainer.cpp test_lm_util.cpp)
  target_link_libraries(test_trainer PRIVATE fpa_passkey)
endif()
if(TARGET passkey-train)
  add_test(NAME seed_independent_of_impl
           COMMAND ${CMAKE_SOURCE_DIR}/tests/seed_independent_of_impl.sh ${CMAKE_BINARY_DIR}/bin)
  add_test(NAME passkey_train_resume
           COMMAND ${CMAKE_SOURCE_DIR}/lm/passkey/test_resume.sh ${CMAKE_BINARY_DIR}/bin)
endif()
# lm/passkey/reproduce.sh with stub binaries: parallel runs, skipping, recipe guard, failures.
add_test(NAME passkey_reproduce_script COMMAND ${CMAKE_SOURCE_DIR}/lm/passkey/test_reproduce_script.sh)
# The merge of per-run summaries with amendments (a re-run of some policies after a code change).
add_test(NAME merge_summaries_amendments
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/merge_summaries_amendments.py)
# lm/passkey/sweep.sh with a stub evaluator: each study's weights, config and folder; skipping; bad input.
add_test(NAME passkey_sweep_script COMMAND ${CMAKE_SOURCE_DIR}/lm/passkey/test_sweep_script.sh)
