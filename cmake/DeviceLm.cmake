# The GPU device build of the language models (-DFPA_DEVICE_LM=ON): kernels/, experiments/ and lm/
# (lm-train, lm-eval, and for decoding on the device passkey-eval and lm-compress with the cache
# policies; no SentencePiece module, no tests or benchmarks) against a LibTorch
# (PyTorch's: torch.utils.cmake_prefix_path), with every other package taken from the folder
# FPA_THIRD_PARTY (default third_party/, filled by scripts/prepare-device-check.sh) and never
# searched for on the system: Boost.Program_options (headers; compiled here from its sources, else
# Debian's static library), fmt (header-only), nlohmann_json and fast-cpp-csv-parser (headers).
# It is lm/device-check.sh's build, for a GPU machine with PyTorch, nvcc and CMake only:
#   cmake -S . -B build-gpu-lm -G Ninja -DFPA_DEVICE_LM=ON \
#     -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
#     -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$(python3 -c 'import torch;print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')"
#   cmake --build build-gpu-lm --target lm-train lm-eval    (passkey-eval lm-compress: decoding,
#                                                            scripts/decode-device-check.sh)
# (C++20 when PyTorch's headers refuse C++17: cmake/TorchCxxStandard.cmake.)
# SHA-256 (the tokenizer's checksums) is the built-in one (lm/sha256.cpp, FPA_SHA256_BUILTIN), not
# OpenSSL's. A sub-word run stops with the SentencePiece module's one-line error: use the bytes
# tokenizer (vocab-size 256).
find_package(Torch REQUIRED)
include(cmake/TorchCxxStandard.cmake)

set(FPA_THIRD_PARTY "${CMAKE_SOURCE_DIR}/third_party" CACHE PATH
    "folder of the vendored packages (scripts/prepare-device-check.sh)")
set(_tp "${FPA_THIRD_PARTY}")
foreach(f fmt-include/fmt/format.h boost-include/boost/program_options.hpp
          nlohmann-include/nlohmann/json.hpp fccp-include/libfccp/csv.h)
  if(NOT EXISTS "${_tp}/${f}")
    message(FATAL_ERROR "FPA_DEVICE_LM: ${_tp}/${f} is missing: run scripts/prepare-device-check.sh "
                        "on a machine with the suite's packages and carry third_party/")
  endif()
endforeach()

# fmt, header-only.
add_library(fpa_fmt_header_only INTERFACE)
target_include_directories(fpa_fmt_header_only SYSTEM INTERFACE "${_tp}/fmt-include")
target_compile_definitions(fpa_fmt_header_only INTERFACE FMT_HEADER_ONLY=1)
add_library(fmt::fmt ALIAS fpa_fmt_header_only)

# Boost.Program_options: its sources compiled with this build's compiler and C++ ABI when they were
# vendored, else Debian's static library (built with _GLIBCXX_USE_CXX11_ABI=1, as PyTorch 2.x
# wheels are; a LibTorch with the old ABI then fails to link, naming std::__cxx11 symbols).
file(GLOB _po_sources "${_tp}/boost-program-options/src/*.cpp")
if(_po_sources)
  add_library(fpa_boost_program_options STATIC ${_po_sources})
  set_target_properties(fpa_boost_program_options PROPERTIES UNITY_BUILD OFF POSITION_INDEPENDENT_CODE ON)
  target_include_directories(fpa_boost_program_options SYSTEM PUBLIC "${_tp}/boost-include")
  target_compile_definitions(fpa_boost_program_options PUBLIC BOOST_ALL_NO_LIB
                             PRIVATE BOOST_BIND_GLOBAL_PLACEHOLDERS)  # as Boost 1.74 builds it
  set(_po_from "sources")
elseif(EXISTS "${_tp}/boost-program-options/libboost_program_options.a")
  add_library(fpa_boost_program_options STATIC IMPORTED)
  set_target_properties(fpa_boost_program_options PROPERTIES
    IMPORTED_LOCATION "${_tp}/boost-program-options/libboost_program_options.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_tp}/boost-include"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${_tp}/boost-include"
    INTERFACE_COMPILE_DEFINITIONS BOOST_ALL_NO_LIB)
  set(_po_from "Debian's static library")
else()
  message(FATAL_ERROR "FPA_DEVICE_LM: neither ${_tp}/boost-program-options/src nor its "
                      "libboost_program_options.a: run scripts/prepare-device-check.sh")
endif()
add_library(Boost::program_options ALIAS fpa_boost_program_options)

add_library(fpa_nlohmann_json INTERFACE)
target_include_directories(fpa_nlohmann_json SYSTEM INTERFACE "${_tp}/nlohmann-include")
add_library(nlohmann_json::nlohmann_json ALIAS fpa_nlohmann_json)
set(FCCP_INCLUDE_DIR "${_tp}/fccp-include")

include(cmake/Cuda.cmake)
include(cmake/CodeVersion.cmake)
message(STATUS "FPA: device build of lm-train, lm-eval, passkey-eval and lm-compress (third_party: ${_tp}; program_options "
               "from ${_po_from}; torch-cuda=${FPA_TORCH_HAS_CUDA})")

add_subdirectory(kernels)
add_subdirectory(experiments)
add_subdirectory(lm)
