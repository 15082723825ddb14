# The commit, plus "-dirty" when tracked files outside results/ differ from it: results are what
# the binaries write (a study running while its binaries are rebuilt must not mark them dirty).
# Without git, $CODE_VERSION, else "unknown".
execute_process(COMMAND git describe --always --abbrev=12
                WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE V
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE RC)
if(NOT RC EQUAL 0 OR V STREQUAL "")
  # No git (a copy of the tree, as the GPU machines get): the version the caller names, e.g.
  # CODE_VERSION=$(git describe --always --abbrev=12 --dirty) taken where the repository is.
  if(NOT "$ENV{CODE_VERSION}" STREQUAL "")
    set(V "$ENV{CODE_VERSION}")
  else()
    set(V "unknown")
  endif()
else()
  execute_process(COMMAND git diff --quiet HEAD -- . ":(exclude)results"
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE DIRTY ERROR_QUIET)
  if(NOT DIRTY EQUAL 0)
    set(V "${V}-dirty")
  endif()
endif()
set(CONTENT "namespace fpa { const char* code_version() { return \"${V}\"; } }\n")
if(EXISTS ${OUT})
  file(READ ${OUT} OLD)
endif()
if(NOT "${OLD}" STREQUAL "${CONTENT}")
  file(WRITE ${OUT} "${CONTENT}")
endif()
