# The kernels-only build (-DFPA_KERNELS_ONLY=ON): the attention operators (kernels/), the tests
# that need nothing but them (tests/kernels_device.cmake: the tile algorithm, the tiled CUDA
# kernels, emulated and on a GPU, the CUDA kernels against the reference) and torch.ops.fpa
# (kernels/python/), from LibTorch, fmt and GoogleTest alone. It is the GPU device check's build
# (kernels/cuda/device-check.sh) and how a user of a PyTorch 2.x installation, CPU or CUDA, gets
# torch.ops.fpa without the suite's other packages:
#   cmake -S . -B build-kernels -DFPA_KERNELS_ONLY=ON \
#     -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')"
# fmt: an installed package, else its headers used header-only from FPA_FMT_INCLUDE. GoogleTest:
# an installed package, else built from its source tree FPA_GTEST_SOURCE (for example a copy of
# Debian's /usr/src/googletest: scripts/prepare-device-check.sh puts both in third_party/).
find_package(Torch REQUIRED)
include(cmake/TorchCxxStandard.cmake)

set(FPA_FMT_INCLUDE "" CACHE PATH "fmt's include folder, used header-only when no fmt package is found")
find_package(fmt QUIET)
if(NOT fmt_FOUND)
  if(NOT EXISTS "${FPA_FMT_INCLUDE}/fmt/format.h")
    message(FATAL_ERROR "FPA_KERNELS_ONLY: no fmt package; set FPA_FMT_INCLUDE to a folder holding fmt/format.h")
  endif()
  add_library(fpa_fmt_header_only INTERFACE)
  target_include_directories(fpa_fmt_header_only INTERFACE "${FPA_FMT_INCLUDE}")
  target_compile_definitions(fpa_fmt_header_only INTERFACE FMT_HEADER_ONLY=1)
  add_library(fmt::fmt ALIAS fpa_fmt_header_only)
endif()

set(FPA_GTEST_SOURCE "" CACHE PATH "GoogleTest's source tree, built here when no GTest package is found")
if(FPA_GTEST_SOURCE)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  add_subdirectory("${FPA_GTEST_SOURCE}" "${CMAKE_BINARY_DIR}/googletest" EXCLUDE_FROM_ALL)
else()
  find_package(GTest REQUIRED)
endif()

# RapidCheck, for test_tile_algorithm's properties: an installed package, else Debian's headers
# and static library copied into FPA_RAPIDCHECK_DIR (include/, lib/librapidcheck.a:
# scripts/prepare-device-check.sh; built with the C++11 ABI). Without either, the kernel tests
# that need it are not built (tests/kernels_device.cmake); CI runs them in the full build.
set(FPA_RAPIDCHECK_DIR "" CACHE PATH "RapidCheck's include/ and lib/librapidcheck.a, used when no rapidcheck package is found")
find_package(rapidcheck QUIET)
if(NOT TARGET rapidcheck AND EXISTS "${FPA_RAPIDCHECK_DIR}/lib/librapidcheck.a")
  add_library(rapidcheck STATIC IMPORTED)
  set_target_properties(rapidcheck PROPERTIES
    IMPORTED_LOCATION "${FPA_RAPIDCHECK_DIR}/lib/librapidcheck.a"
    INTERFACE_INCLUDE_DIRECTORIES "${FPA_RAPIDCHECK_DIR}/include")
endif()
if(TARGET rapidcheck)
  set(fpa_rapidcheck "found")
else()
  set(fpa_rapidcheck "absent: test_tile_algorithm not built")
endif()

include(cmake/Cuda.cmake)
message(STATUS "FPA: kernels-only build (fmt ${fmt_FOUND}, GoogleTest from ${FPA_GTEST_SOURCE}, RapidCheck ${fpa_rapidcheck})")

add_subdirectory(kernels)

enable_testing()
include(GoogleTest)
function(fpa_test name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE fpa_kernels GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 900)
endfunction()
include(tests/kernels_device.cmake)
