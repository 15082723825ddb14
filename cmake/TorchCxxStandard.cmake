# The C++ standard of every target, chosen once LibTorch is found (include it right after
# find_package(Torch), before any target): 17, as the published CPU build with Debian's LibTorch
# 1.13 is compiled, unless LibTorch's headers refuse it (PyTorch's newer ones: "C++20 or later
# compatible compiler is required to use ATen"), then 20. The code compiles as either;
# scripts/check-torch-headers.sh checks it against a newer LibTorch's headers. -DFPA_CXX_STANDARD=17
# or 20 chooses by hand. (The probe's answer is cached: a build folder switched to another
# LibTorch wants a fresh folder, as it does for the rest of LibTorch's configuration.)
set(FPA_CXX_STANDARD "" CACHE STRING "the C++ standard, 17 or 20 (empty: 17 unless LibTorch's headers need 20)")
if(FPA_CXX_STANDARD STREQUAL "")
  include(CheckCXXSourceCompiles)
  set(CMAKE_CXX_STANDARD 17)
  set(CMAKE_REQUIRED_INCLUDES ${TORCH_INCLUDE_DIRS})
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles("#include <ATen/core/TensorBase.h>\nint main() { return 0; }"
                            FPA_TORCH_HEADERS_TAKE_CXX17)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_QUIET)
  if(FPA_TORCH_HEADERS_TAKE_CXX17)
    set(_fpa_std 17)
    set(_fpa_why "LibTorch's headers take C++17")
  else()
    set(_fpa_std 20)
    set(_fpa_why "LibTorch's headers refuse C++17")
  endif()
elseif(FPA_CXX_STANDARD MATCHES "^(17|20)$")
  set(_fpa_std ${FPA_CXX_STANDARD})
  set(_fpa_why "FPA_CXX_STANDARD")
else()
  message(FATAL_ERROR "FPA_CXX_STANDARD must be 17 or 20 (or empty to probe LibTorch), not '${FPA_CXX_STANDARD}'")
endif()
set(CMAKE_CXX_STANDARD ${_fpa_std})
set(CMAKE_CXX_STANDARD_REQUIRED ON)
message(STATUS "FPA: C++${_fpa_std} (${_fpa_why})")
