# launcher_probe: a stand-in training binary that local_launcher_test.cpp
# launches through LocalLauncher (it must be a separate executable because the
# launcher re-executes /proc/self/exe). Included from tests/CMakeLists.txt
# after fulgur_tests is defined.
add_executable(launcher_probe ${CMAKE_CURRENT_LIST_DIR}/launcher_probe.cpp)
target_link_libraries(launcher_probe PRIVATE fulgur)
add_dependencies(fulgur_tests launcher_probe)
