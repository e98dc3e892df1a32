# Layering, checked at configure time (so CI fails on a violation): the diagnosis engine links the trace
# library and header/format libraries only, and the trace library links nothing of stalldx. Anything
# else (the profiler, TBB, turbojpeg, CUDA) reaching diagnose/ is a configure error.
function(stalldx_check_links target)
  get_target_property(libs ${target} LINK_LIBRARIES)
  if(NOT libs)
    set(libs "")
  endif()
  foreach(lib IN LISTS libs)
    if(NOT lib IN_LIST ARGN)
      message(FATAL_ERROR "layering: ${target} links '${lib}'; it may link only: ${ARGN}")
    endif()
  endforeach()
endfunction()

stalldx_check_links(stalldx_trace fmt::fmt nlohmann_json::nlohmann_json ZLIB::ZLIB simdjson::simdjson ${RE2_LIBRARY})
stalldx_check_links(stalldx_diagnose stalldx_trace fmt::fmt nlohmann_json::nlohmann_json)
