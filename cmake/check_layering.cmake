# The layering check (a CTest test): every `#include "DIR/..."` under src/
# must point down the dependency graph that CMakeLists.txt declares with
# pagoda_module(NAME DEPS ...), the same one-way arrows the map of
# the house in docs/architecture.md draws. A module may include its own headers and those of the
# modules it depends on, directly or through others. The binary's folders
# (cli/, tools/cmd/) may include any module the binary links.
#
#   cmake -DSOURCE_DIR=<repo> -P cmake/check_layering.cmake
cmake_minimum_required(VERSION 3.22)

file(READ "${SOURCE_DIR}/CMakeLists.txt" cmakelists)
string(REGEX MATCHALL "pagoda_module\\([^)]*\\)" declarations "${cmakelists}")
set(modules "")
foreach(decl IN LISTS declarations)
  string(REGEX REPLACE "pagoda_module\\(([a-z_0-9]+).*" "\\1" name "${decl}")
  string(REGEX REPLACE "^pagoda_module\\([a-z_0-9]+" "" rest "${decl}")
  string(REGEX MATCHALL "pagoda_[a-z_0-9]+" deps "${rest}")
  list(TRANSFORM deps REPLACE "^pagoda_" "")
  list(APPEND modules ${name})
  set(direct_${name} ${deps})
endforeach()

# What each module may include: itself and everything below it.
foreach(m IN LISTS modules)
  set(reach ${m})
  set(frontier ${direct_${m}})
  while(frontier)
    list(POP_FRONT frontier d)
    if(NOT d IN_LIST reach)
      list(APPEND reach ${d})
      list(APPEND frontier ${direct_${d}})
    endif()
  endwhile()
  set(allowed_${m} ${reach})
endforeach()
# The binary: cli/ and tools/cmd/ over what `pagoda` links.
set(allowed_binary cli)
foreach(m IN LISTS modules)
  list(APPEND allowed_binary ${allowed_${m}})
endforeach()
list(REMOVE_DUPLICATES allowed_binary)

file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}/src" "${SOURCE_DIR}/src/*.h" "${SOURCE_DIR}/src/*.cpp")
set(violations 0)
foreach(rel IN LISTS sources)
  if(rel MATCHES "^(cli|tools/cmd)/")
    set(owner binary)
  else()
    string(REGEX REPLACE "/.*" "" owner "${rel}")
    if(NOT owner IN_LIST modules)
      message(SEND_ERROR "src/${rel}: its folder '${owner}' is not a pagoda_module in CMakeLists.txt")
      math(EXPR violations "${violations} + 1")
      continue()
    endif()
  endif()
  file(STRINGS "${SOURCE_DIR}/src/${rel}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"/]+/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"/]+)/.*" "\\1" target "${line}")
    if(NOT target IN_LIST modules AND NOT target STREQUAL "cli")
      continue()  # not a folder of src/ (say, a header generated into the build tree)
    endif()
    if(NOT target IN_LIST allowed_${owner})
      message(SEND_ERROR "src/${rel}: includes \"${target}/...\", but '${owner}' does not depend on '${target}' "
                         "(pagoda_module(${owner} DEPS ...) in CMakeLists.txt)")
      math(EXPR violations "${violations} + 1")
    endif()
  endforeach()
endforeach()
list(LENGTH sources n)
if(violations GREATER 0)
  message(FATAL_ERROR "layering: ${violations} include(s) against the dependency graph")
endif()
message(STATUS "layering: ${n} files, every include points down the graph")
