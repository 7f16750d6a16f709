#pragma once
// What the memlens-cli commands share: the one FILE argument, the device a command reads, and
// JSON output.
#include "CliArgs.h"

#include <nlohmann/json.hpp>

#include <string>

namespace memlens::model {
class Snapshot;
}

namespace memlens::cli {

using Json = nlohmann::ordered_json;

// The command's one positional FILE; UsageError otherwise.
std::string oneFile(const CliArgs& a, const char* command);
// DEVICE as an index of the snapshot: UsageError when it is no index, model::ParseError (one line,
// with the devices it has) when the snapshot has no such device.
// DEVICE is an index or "host" (the pinned host memory, model::kHostDevice).
int checkDevice(const model::Snapshot& s, long long device);
int checkDevice(const model::Snapshot& s, const CliArgs& a);  // from --device
// --device as a number: an index, or model::kHostDevice for "host"; UsageError otherwise.
long long deviceArgument(const CliArgs& a);
// Pretty-printed, invalid UTF-8 replaced.
void printJson(const Json& j);
// Appends to a buffer that goes to stdout a megabyte at a time (long CSV output).
void writeBuffered(std::string& out, const char* text);

} // namespace memlens::cli
