#include "memlens/model/ParseError.h"

namespace memlens::model {

std::string ParseError::describe(const std::string& file) const {
    std::string s = file + ": ";
    if (!where_.empty())
        s += where_ + ": ";
    else if (offset_ != kNoOffset)
        s += "byte " + std::to_string(offset_) + ": ";
    std::string w = what();
    for (char& c : w)
        if (c == '\n' || c == '\r') c = ' ';
    return s + w;
}

} // namespace memlens::model
