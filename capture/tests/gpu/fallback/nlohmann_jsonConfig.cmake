# FALLBACK for capture/tests/gpu/run.sh only: nlohmann_json::nlohmann_json from a json.hpp found
# on the machine (NLOHMANN_JSON_INCLUDE_DIR, the directory that holds nlohmann/json.hpp), when
# the nlohmann-json3-dev package (or another CMake package of it) is not installed.
set(nlohmann_json_VERSION 3.99.0)
if(NOT TARGET nlohmann_json::nlohmann_json)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${NLOHMANN_JSON_INCLUDE_DIR}")
endif()
set(nlohmann_json_FOUND TRUE)
