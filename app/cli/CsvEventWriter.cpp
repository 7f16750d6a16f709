#include "CsvEventWriter.h"

#include "CommandHelpers.h"

#include <cstdio>
#include <iostream>

namespace memlens::cli {

CsvEventWriter::CsvEventWriter() : out_("action,addr,size,stream\n") {}

void CsvEventWriter::onEvent(const model::SimEvent& e) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s,%llu,%llu,%llu\n", model::actionName(e.action),
                  static_cast<unsigned long long>(e.addr), static_cast<unsigned long long>(e.size),
                  static_cast<unsigned long long>(e.stream));
    writeBuffered(out_, buf);
}

void CsvEventWriter::flush() {
    std::cout << out_;
    out_.clear();
}

} // namespace memlens::cli
