# cmake -DIN=FILE -DOUT=FILE.cpp -DNAME=identifier -P EmbedBytes.cmake
# Writes FILE's bytes as `extern const unsigned char NAME[]` and `extern const unsigned long
# NAME_size` in namespace memlens::capture (a small file carried inside a program).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp" "// generated from ${IN} by EmbedBytes.cmake\nnamespace memlens::capture {\nextern const unsigned char ${NAME}[] = {\n${bytes}\n};\nextern const unsigned long ${NAME}_size = ${size};\n}\n")
file(RENAME "${OUT}.tmp" "${OUT}")
