# Writes nsrvd's dynamic list (ld --dynamic-list) for nsrvd-crypto.so: every nsrv_* symbol the
# module leaves undefined, sorted. Usage: cmake -DNM=nm -DMODULE=nsrvd-crypto.so -DOUT=file -P
execute_process(COMMAND ${NM} -D --undefined-only --format=posix ${MODULE}
                OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} could not read ${MODULE}")
endif()
string(REGEX MATCHALL "(^|\n)nsrv_[A-Za-z0-9_]+" names "${syms}")
list(TRANSFORM names STRIP)
list(REMOVE_DUPLICATES names)
list(SORT names)
set(text "/* Generated from ${MODULE} by host_exports.cmake: the helpers it takes from nsrvd. */\n{\n")
foreach(n IN LISTS names)
  string(APPEND text "  ${n};\n")
endforeach()
string(APPEND text "};\n")
file(WRITE ${OUT}.tmp "${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
file(REMOVE ${OUT}.tmp)
