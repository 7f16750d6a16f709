#include "ExampleSnapshot.h"

#include <QCoreApplication>
#include <QFileInfo>

namespace memlens::gui {

QString findExampleSnapshot() {
    const QString candidates[] = {
        QCoreApplication::applicationDirPath() + QStringLiteral("/../share/memlens/example.pickle"),
        QStringLiteral(MEMLENS_EXAMPLE_INSTALLED),
        QStringLiteral(MEMLENS_EXAMPLE_SOURCE),
    };
    for (const QString& c : candidates)
        if (QFileInfo(c).isFile()) return QFileInfo(c).canonicalFilePath();
    return {};
}

} // namespace memlens::gui
