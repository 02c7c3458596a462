# Writes OUT, a C file defining NAME[] (the bytes of IN plus a NUL) and NAME_len, so a file
# such as the cluster page (cluster_page.html) is edited as itself and built into nsrvd.
#   cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(src ${IN} NAME)
file(WRITE ${OUT} "/* Generated from ${src} by embed.cmake: edit that file, not this one. */\n"
                  "#include <stddef.h>\n"
                  "const char ${NAME}[] = {\n${bytes}0};\n"
                  "const size_t ${NAME}_len = ${len};\n")
