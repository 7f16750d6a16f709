#pragma once
// Include this instead of <qcustomplot.h>: two of its templates use `foreach`, which this project
// turns off (QT_NO_FOREACH). For the length of the include, foreach is a range-based for.
#if defined(QT_NO_FOREACH) && !defined(foreach)
#define foreach(variable, container) for (variable : container)
#define MEMLENS_QCP_FOREACH
#endif
#include <qcustomplot.h>
#ifdef MEMLENS_QCP_FOREACH
#undef foreach
#undef MEMLENS_QCP_FOREACH
#endif
