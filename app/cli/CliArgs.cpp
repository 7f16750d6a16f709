#include "CliArgs.h"

#include <charconv>

namespace memlens::cli {

CliArgs::CliArgs(const std::vector<std::string>& args, const std::set<std::string>& flags,
                 const std::set<std::string>& valued) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.size() > 2 && a.rfind("--", 0) == 0) {
            std::string name = a.substr(2), val;
            bool inlineValue = false;
            if (auto eq = name.find('='); eq != std::string::npos) {
                val = name.substr(eq + 1);
                name = name.substr(0, eq);
                inlineValue = true;
            }
            if (flags.count(name)) {
                if (inlineValue) throw UsageError("option --" + name + " takes no value");
                flags_.insert(name);
            } else if (valued.count(name)) {
                if (!inlineValue) {
                    if (i + 1 >= args.size()) throw UsageError("option --" + name + " needs a value");
                    val = args[++i];
                }
                values_[name] = val;
            } else {
                throw UsageError("unknown option --" + name);
            }
        } else if (a == "-o" && valued.count("output")) {
            if (i + 1 >= args.size()) throw UsageError("option -o needs a value");
            values_["output"] = args[++i];
        } else {
            positional_.push_back(a);
        }
    }
}

std::optional<std::string> CliArgs::value(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

long long CliArgs::integer(const std::string& name, std::optional<long long> fallback) const {
    auto v = value(name);
    if (!v) {
        if (fallback) return *fallback;
        throw UsageError("missing option --" + name);
    }
    long long out = 0;
    auto r = std::from_chars(v->data(), v->data() + v->size(), out);
    if (r.ec != std::errc() || r.ptr != v->data() + v->size())
        throw UsageError("option --" + name + " needs an integer, got '" + *v + "'");
    return out;
}

} // namespace memlens::cli
