#include "CommandHelpers.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/Snapshot.h"

#include <iostream>

namespace memlens::cli {

std::string oneFile(const CliArgs& a, const char* command) {
    if (a.positional().size() != 1) throw UsageError(std::string(command) + " takes exactly one FILE");
    return a.positional()[0];
}

long long deviceArgument(const CliArgs& a) {
    if (a.value("device") == std::optional<std::string>("host")) return model::kHostDevice;
    long long device = a.integer("device");
    if (device < 0 || device > (1 << 16)) throw UsageError("--device must be a device index or 'host'");
    return device;
}

int checkDevice(const model::Snapshot& s, long long device) {
    if (device != model::kHostDevice && (device < 0 || device > (1 << 16)))
        throw UsageError("--device must be a device index or 'host'");
    if (!s.device(static_cast<int>(device))) {
        std::string have;
        for (const auto& d : s.devices)
            have += (have.empty() ? "" : ", ") + (d.isHost() ? std::string("host") : std::to_string(d.device));
        throw model::ParseError(model::ParseError::kNoOffset, "device " + (device == model::kHostDevice ? std::string("host") : std::to_string(device)),
                                "no such device in this snapshot (it has: " + (have.empty() ? "none" : have) + ")");
    }
    return static_cast<int>(device);
}

int checkDevice(const model::Snapshot& s, const CliArgs& a) { return checkDevice(s, deviceArgument(a)); }

void printJson(const Json& j) { std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n"; }

void writeBuffered(std::string& out, const char* text) {
    out += text;
    if (out.size() > (1 << 20)) {
        std::cout << out;
        out.clear();
    }
}

} // namespace memlens::cli
