#include "document/BackgroundLoad.h"

#include <cmath>

namespace memlens::views {

bool ProgressThrottle::due(const char* phase, double fraction) {
    const int pct = static_cast<int>(std::floor(fraction * 100));
    if (phase == m_phase && pct == m_pct) return false;
    m_phase = phase;
    m_pct = pct;
    return true;
}

} // namespace memlens::views
