# Writes OUT, the header defining DOWNSCALE_VERSION: VERSION with the git revision of the checkout
# SRC it is built from ("0.1.0+g1a2b3c4", "-dirty" after it with uncommitted changes); outside a
# checkout (a container built from copied folders) REVISION, cmake's -DDOWNSCALE_REVISION=, else
# VERSION alone. Run at every build
# (io/CMakeLists.txt); the file is rewritten only when its text changes, so an unchanged revision
# recompiles nothing. What every output's software_version, source and --version then say.
# The revision only when SRC is the checkout's top (not a copy inside another repository), and
# read without taking git's index lock (--no-optional-locks), which a commit running meanwhile holds.
execute_process(COMMAND git -C "${SRC}" rev-parse --show-toplevel
                OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
set(rev "")
if(rc EQUAL 0)
  get_filename_component(top "${top}" REALPATH)
  get_filename_component(src_real "${SRC}" REALPATH)
endif()
if(rc EQUAL 0 AND top STREQUAL src_real)
  execute_process(COMMAND git -C "${SRC}" rev-parse --short=7 HEAD
                  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  execute_process(COMMAND git --no-optional-locks -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes ERROR_QUIET RESULT_VARIABLE rc_status)
  if(rc EQUAL 0 AND rc_status EQUAL 0 AND NOT changes STREQUAL "")
    set(rev "${rev}-dirty")
  endif()
endif()
if(rc EQUAL 0 AND rev)
  set(version "${VERSION}+g${rev}")
elseif(REVISION)  # given to cmake as DOWNSCALE_REVISION where the copy has no .git (a container build)
  set(version "${VERSION}+g${REVISION}")
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
