#----------------------------------------------------------------
# Generated CMake target import file for configuration "RelWithDebInfo".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "mq::mq" for configuration "RelWithDebInfo"
set_property(TARGET mq::mq APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(mq::mq PROPERTIES
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libmq.so.1.0.0"
  IMPORTED_SONAME_RELWITHDEBINFO "libmq.so.1"
  )

list(APPEND _cmake_import_check_targets mq::mq )
list(APPEND _cmake_import_check_files_for_mq::mq "${_IMPORT_PREFIX}/lib/libmq.so.1.0.0" )

# Import target "mq::mq_static" for configuration "RelWithDebInfo"
set_property(TARGET mq::mq_static APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(mq::mq_static PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELWITHDEBINFO "CXX"
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libmq.a"
  )

list(APPEND _cmake_import_check_targets mq::mq_static )
list(APPEND _cmake_import_check_files_for_mq::mq_static "${_IMPORT_PREFIX}/lib/libmq.a" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
