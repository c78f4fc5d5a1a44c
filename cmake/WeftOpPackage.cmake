# weft_add_op_package(NAME <name> SOURCES <src...> [HEADERS <hdr...>] [OUTPUT_DIR <dir>])
#
# Builds an operator package in the OPP layout:
#   <dir>/op_graph/include/<HEADERS>
#   <dir>/op_graph/lib/linux/<arch>/lib<name>.so
#   <dir>/weft_manifest.json            (ops, versions, capabilities, ABI level, library hash)
# <dir> defaults to ${CMAKE_CURRENT_BINARY_DIR}/<name>_package. Point WEFT_CUSTOM_OPP_PATH at it.
# The library links only the header-only SDK; its symbols are hidden except the entry point.
function(weft_add_op_package)
  cmake_parse_arguments(ARG "" "NAME;OUTPUT_DIR" "SOURCES;HEADERS" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_SOURCES)
    message(FATAL_ERROR "weft_add_op_package: NAME and SOURCES are required")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_package)
  endif()
  set(libdir ${ARG_OUTPUT_DIR}/op_graph/lib/linux/${CMAKE_SYSTEM_PROCESSOR})
  add_library(${ARG_NAME} MODULE ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE Weft::sdk)
  set_target_properties(${ARG_NAME} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${libdir})
  set(copy_headers)
  foreach(h ${ARG_HEADERS})
    get_filename_component(abs ${h} ABSOLUTE)
    list(APPEND copy_headers COMMAND ${CMAKE_COMMAND} -E copy ${abs} ${ARG_OUTPUT_DIR}/op_graph/include/)
  endforeach()
  add_custom_command(TARGET ${ARG_NAME} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_OUTPUT_DIR}/op_graph/include
    ${copy_headers}
    COMMAND $<TARGET_FILE:Weft::cli> manifest ${ARG_OUTPUT_DIR} --name ${ARG_NAME}
    COMMENT "Writing the Weft manifest of operator package ${ARG_NAME}"
    VERBATIM)
  set_property(TARGET ${ARG_NAME} PROPERTY WEFT_PACKAGE_DIR ${ARG_OUTPUT_DIR})
endfunction()
