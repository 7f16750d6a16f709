#pragma once
// Byte counts as people read them: "512 B", "16.5 MiB", "180 MiB", "3.1 GiB".
#include <cstdint>
#include <string>

namespace memlens::model {

// Binary units; one decimal below 100 of a unit, none from 100 on; a trailing ".0" is dropped.
std::string formatBytes(uint64_t bytes);
// Same, with a sign for differences: "-4 MiB", "+1.5 GiB".
std::string formatSignedBytes(int64_t bytes);

} // namespace memlens::model
