# The flags every handler is built with, here and by `cspd --compile` (host/handler/compiler.cpp
# reads these lists from a header CMake writes from them): one list, two builders.
#  - hidden visibility: a handler exports its entry point alone, and two handlers never collide;
#  - -fno-gnu-unique (g++): g++ otherwise marks some C++ statics STB_GNU_UNIQUE, which makes
#    glibc refuse to ever unload the library, so old versions would pile up on reload;
#  - -z defs: a typo'd symbol fails the build instead of the load.
set(CSP_HANDLER_FLAGS -fvisibility=hidden)
set(CSP_HANDLER_CXX_FLAGS -fvisibility-inlines-hidden)
set(CSP_HANDLER_GNU_CXX_FLAGS -fno-gnu-unique)
set(CSP_HANDLER_LINK_FLAGS -Wl,-z,defs)

# csp_add_handler(NAME SOURCE... [OUTPUT_DIR dir] [DEFINITIONS def...])
# Builds NAME.so, a cspd handler, into OUTPUT_DIR (default: CSP_HANDLER_OUTPUT_DIR,
# else the current binary dir). The target is called csp_handler_NAME unless TARGET is given.
function(csp_add_handler name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIR;TARGET" "DEFINITIONS" ${ARGN})
  set(sources ${ARG_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "csp_add_handler(${name}): no source files")
  endif()
  if(NOT name MATCHES "^[A-Za-z0-9_-]+$")
    message(FATAL_ERROR "csp_add_handler(${name}): handler names are [A-Za-z0-9_-]+")
  endif()
  set(target ${ARG_TARGET})
  if(NOT target)
    set(target csp_handler_${name})
  endif()
  set(out ${ARG_OUTPUT_DIR})
  if(NOT out)
    if(CSP_HANDLER_OUTPUT_DIR)
      set(out ${CSP_HANDLER_OUTPUT_DIR})
    else()
      set(out ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  add_library(${target} MODULE ${sources})
  set_target_properties(${target} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name} SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY ${out})
  target_compile_options(${target} PRIVATE ${CSP_HANDLER_FLAGS}
                         $<$<COMPILE_LANGUAGE:CXX>:${CSP_HANDLER_CXX_FLAGS}>
                         $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:${CSP_HANDLER_GNU_CXX_FLAGS}>)
  if(TARGET cspd::sdk)
    target_link_libraries(${target} PRIVATE cspd::sdk)
  endif()
  # Sanitizer builds leave the sanitizer runtime's symbols to the host process, so they set
  # CSP_HANDLER_ALLOW_UNDEFINED.
  if(NOT CSP_HANDLER_ALLOW_UNDEFINED)
    target_link_options(${target} PRIVATE ${CSP_HANDLER_LINK_FLAGS})
  endif()
  if(ARG_DEFINITIONS)
    target_compile_definitions(${target} PRIVATE ${ARG_DEFINITIONS})
  endif()
endfunction()
