# A CPU-only build against a CUDA build of LibTorch (PyPI's torch wheel),
# without a CUDA toolkit. Included just before find_package(Torch) by
# fulgur's CMakeLists.txt and by the installed fulgurConfig.cmake.
#
# LibTorch's CMake files, when LibTorch was built with CUDA, look for a whole
# toolkit (Caffe2's public/cuda.cmake: FindCUDA with CUDA_TOOLKIT_ROOT_DIR,
# nvcc, cudart, then enable_language(CUDA)) and stop with "Your installed
# Caffe2 version uses CUDA but I cannot find the CUDA libraries" where there
# is none, even for a program that links only LibTorch's CPU half (fulgur
# links torch_cpu and c10; the CUDA half is the fulgur_cuda module). That
# file returns at once when the target torch::cudart exists (its include
# guard); defining it here as an empty interface target skips the search.
# It is done where
#   - FULGUR_WITH_CUDA is OFF (no CUDA is looked for, toolkit or not), or
#   - no CUDA compiler is named or found (CMAKE_CUDA_COMPILER, CUDACXX,
#     CUDAToolkit_ROOT, the PATH, /usr/local/cuda: the search before this);
# elsewhere LibTorch's CMake files find CUDA as before. Sets FULGUR_CPU_ONLY.
# A CPU build of LibTorch never reads public/cuda.cmake: the target is then
# unused. The guard is in public/cuda.cmake of LibTorch 2.x alike.
set(FULGUR_CPU_ONLY OFF)
if(TARGET torch::cudart)  # LibTorch's CMake files already read (a parent project)
  return()
endif()
if(DEFINED FULGUR_WITH_CUDA AND NOT FULGUR_WITH_CUDA)
  set(_fulgur_cpu_only_why "FULGUR_WITH_CUDA is OFF")
elseif(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  set(_fulgur_cpu_only_why "no CUDA compiler: none named, none on the PATH, in CUDAToolkit_ROOT or /usr/local/cuda")
else()
  return()
endif()
add_library(torch::cudart INTERFACE IMPORTED)
set(FULGUR_CPU_ONLY ON)
message(STATUS "[fulgur] CPU only (${_fulgur_cpu_only_why}): LibTorch's CUDA half is neither looked for nor linked")
unset(_fulgur_cpu_only_why)
