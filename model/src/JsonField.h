#pragma once
// One field of a JSON object read without throwing: the fallback when it is absent, null or of
// another type. For the JSON the agent writes (graph scans, markers), which a reader must survive.
#include <nlohmann/json.hpp>

namespace memlens::model::json_field {

template <class T>
T get(const nlohmann::json& j, const char* key, T fallback = T{}) {
    if (!j.is_object()) return fallback;
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    try {
        return it->get<T>();
    } catch (const std::exception&) {
        return fallback;
    }
}

} // namespace memlens::model::json_field
