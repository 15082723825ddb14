execute_process(COMMAND git describe --always --dirty --abbrev=12
                WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE V
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE RC)
if(NOT RC EQUAL 0 OR V STREQUAL "")
  set(V "unknown")
endif()
set(CONTENT "namespace fpa { const char* code_version() { return \"${V}\"; } }\n")
if(EXISTS ${OUT})
  file(READ ${OUT} OLD)
endif()
if(NOT "${OLD}" STREQUAL "${CONTENT}")
  file(WRITE ${OUT} "${CONTENT}")
endif()
