# Writes OUT: the project's VERSION and the git revision of SOURCE_DIR (with
# -dirty for uncommitted changes), rewritten only when it changes, so a build
# after a commit says which commit it is without recompiling on every build.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" diff --quiet HEAD RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    string(APPEND rev "-dirty")
  endif()
endif()
set(content "#pragma once\n#define PAGODA_VERSION \"${VERSION}\"\n#define PAGODA_GIT_REVISION \"${rev}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
