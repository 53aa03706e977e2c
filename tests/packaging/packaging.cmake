# Packaging checks, included from tests/CMakeLists.txt: the shared library's exported ABI, the
# header next to POSIX <mqueue.h>, and programs built against an installed prefix.

find_program(MQ_BASH bash REQUIRED)
find_program(MQ_PKG_CONFIG pkg-config)
if(NOT MQ_PKG_CONFIG)
  # Still register the tests: a missing tool must fail them loudly, not skip them.
  set(MQ_PKG_CONFIG pkg-config)
endif()
set(MQ_NM ${CMAKE_NM})
if(NOT MQ_NM)
  set(MQ_NM nm)
endif()
set(MQ_READELF ${CMAKE_READELF})
if(NOT MQ_READELF)
  set(MQ_READELF readelf)
endif()

add_test(NAME abi_exports
  COMMAND ${MQ_BASH} ${CMAKE_CURRENT_LIST_DIR}/abi_exports.sh
          $<TARGET_FILE:mq> ${PROJECT_SOURCE_DIR}/include/mq.h)
set_tests_properties(abi_exports PROPERTIES
  ENVIRONMENT "NM=${MQ_NM};READELF=${MQ_READELF}"
  TIMEOUT 60
  LABELS packaging)

# Strict C11 on purpose: the header must compile cleanly for C users, not only for C++.
add_executable(mq_posix_coexist ${CMAKE_CURRENT_LIST_DIR}/posix_mqueue_coexist.c)
target_link_libraries(mq_posix_coexist PRIVATE mq rt ${CMAKE_DL_LIBS})
target_compile_options(mq_posix_coexist PRIVATE -Wall -Wextra -Wpedantic -Werror)
set_target_properties(mq_posix_coexist PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
add_test(NAME posix_mqueue_coexist COMMAND mq_posix_coexist)
set_tests_properties(posix_mqueue_coexist PROPERTIES TIMEOUT 60 LABELS packaging)

# The consumers are built without sanitizers against an installed sanitized libmq, which
# cannot load without the sanitizer runtime first in the process: only the plain build runs it.
if(MQ_SANITIZE)
  message(STATUS "mq: install_consumers test NOT registered: sanitizer build "
                 "(MQ_SANITIZE=${MQ_SANITIZE}); the plain build runs it")
else()
  add_test(NAME install_consumers
    COMMAND ${MQ_BASH} ${CMAKE_CURRENT_LIST_DIR}/install_consumers.sh
            ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(install_consumers PROPERTIES
    ENVIRONMENT "CMAKE=${CMAKE_COMMAND};CC=${CMAKE_C_COMPILER};PKG_CONFIG=${MQ_PKG_CONFIG};CMAKE_GENERATOR=${CMAKE_GENERATOR}"
    TIMEOUT 180
    LABELS packaging)
endif()
