# Regenerates code_version.cpp on every build (rewritten only when the version changes),
# so every CSV records the commit and whether the tree was dirty.
set(FPA_VERSION_CPP ${CMAKE_BINARY_DIR}/generated/code_version.cpp)
add_custom_target(fpa_code_version
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${FPA_VERSION_CPP}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteCodeVersion.cmake
  BYPRODUCTS ${FPA_VERSION_CPP}
  COMMENT "Recording code version")
