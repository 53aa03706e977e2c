# Removes the generated Java classes of DIR that NativeMqJNI.java (SWIG's latest) does not name:
# classes of facade types that are gone. cmake -DDIR=... -P prune_generated.cmake
file(READ ${DIR}/NativeMqJNI.java jni)
file(GLOB classes ${DIR}/*.java)
foreach(f ${classes})
  get_filename_component(name ${f} NAME_WE)
  string(FIND "${jni}" "${name}" at)
  if(at EQUAL -1)
    message(STATUS "removing ${name}.java: SWIG no longer generates it")
    file(REMOVE ${f})
  endif()
endforeach()
