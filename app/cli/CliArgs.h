#pragma once
// Command-line parsing for memlens-cli: positional arguments and --options with values.
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace memlens::cli {

// A mistake in how the command was called: exit status 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CliArgs {
public:
    // flags: options without a value; valued: options that take one.
    CliArgs(const std::vector<std::string>& args, const std::set<std::string>& flags,
            const std::set<std::string>& valued);

    const std::vector<std::string>& positional() const { return positional_; }
    bool has(const std::string& name) const { return flags_.count(name) || values_.count(name); }
    std::optional<std::string> value(const std::string& name) const;
    long long integer(const std::string& name, std::optional<long long> fallback = std::nullopt) const;

private:
    std::vector<std::string> positional_;
    std::set<std::string> flags_;
    std::map<std::string, std::string> values_;
};

} // namespace memlens::cli
