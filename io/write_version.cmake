# Writes OUT, the header defining DOWNSCALE_VERSION: VERSION with the git revision of the checkout
# SRC it is built from ("0.1.0+g1a2b3c4", "-dirty" after it with uncommitted changes; VERSION
# alone outside a checkout: a container or bundle build from copied folders). Run at every build
# (io/CMakeLists.txt); the file is rewritten only when its text changes, so an unchanged revision
# recompiles nothing. What every output's software_version, source and --version then say.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=7
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(rc EQUAL 0 AND rev)
  set(version "${VERSION}+g${rev}")
else()
  set(version "${VERSION}")
endif()
set(text "// Generated at build time by io/write_version.cmake: the version and the git revision.\n#pragma once\n#define DOWNSCALE_VERSION \"${version}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
