# tidal_module(NAME SOURCES ... DEPS ...): one library target per module, so the
# link graph enforces which module may use which (see DESIGN.md).
function(tidal_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(tidal_${name} STATIC ${M_SOURCES})
  target_include_directories(tidal_${name} PUBLIC ${TIDAL_SRC})
  target_link_libraries(tidal_${name} PUBLIC ${M_DEPS})
endfunction()

# tidal_test(NAME SOURCES ... DEPS ...): a GoogleTest executable registered with CTest.
# LABELS lets CI pick slow tests apart from fast ones.
function(tidal_test name)
  if(NOT TIDAL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest_main GTest::gmock rapidcheck rapidcheck_gtest)
  target_compile_definitions(${name} PRIVATE
    TIDAL_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    TIDAL_SHARED_DIR="${CMAKE_SOURCE_DIR}/../shared")
  set(labels unit)
  if(T_LABELS)
    set(labels ${T_LABELS})
  endif()
  # Tests against a real Slurm each start a local cluster (scripts/slurm-dev.sh):
  # one at a time, so two never race for its ports.
  set(lock "")
  if("slurm" IN_LIST labels)
    set(lock RESOURCE_LOCK slurm_cluster)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${labels}" ${lock} DISCOVERY_TIMEOUT 60)
endfunction()
