# Script mode (cmake -P): writes OUTPUT, a header holding INPUT's text as the raw string literal
# gf::codegen::embedded::<stem>_cuh, so hand-written device code (.cuh) reaches NVRTC at run time
# without files next to the binary. Run by the custom command in src/CMakeLists.txt, which
# reruns it whenever INPUT changes.
if(NOT INPUT OR NOT OUTPUT)
  message(FATAL_ERROR "EmbedText.cmake needs -DINPUT=<file> -DOUTPUT=<header>")
endif()
file(READ "${INPUT}" content)
set(delimiter "gf_cuh")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string terminator )${delimiter}\"")
endif()
get_filename_component(stem "${INPUT}" NAME_WE)
string(MAKE_C_IDENTIFIER "${stem}" stem)
file(WRITE "${OUTPUT}"
     "// Generated from ${INPUT} by cmake/EmbedText.cmake; edit the .cuh, not this file.\n"
     "#pragma once\n\n"
     "namespace gf::codegen::embedded {\n\n"
     "inline constexpr const char ${stem}_cuh[] = R\"${delimiter}(${content})${delimiter}\";\n\n"
     "}  // namespace gf::codegen::embedded\n")
