#include "common/FrameText.h"

#include <QStringList>

#include <algorithm>

namespace memlens::views::frametext {

QString shortPath(std::string_view path) {
    for (std::string_view marker : {std::string_view("site-packages/"), std::string_view("dist-packages/")}) {
        size_t p = path.rfind(marker);
        if (p != std::string_view::npos) return QString::fromUtf8(path.substr(p + marker.size()));
    }
    if (size_t p = path.find("lib/python3"); p != std::string_view::npos) {
        size_t slash = path.find('/', p + 11);
        if (slash != std::string_view::npos) return QString::fromUtf8(path.substr(slash + 1));
    }
    const QString full = QString::fromUtf8(path);
    QStringList parts = full.split(QLatin1Char('/'), Qt::SkipEmptyParts);
    parts.removeAll(QStringLiteral("."));
    parts.removeAll(QStringLiteral(".."));  // "a/../b" reads better as "…/b" than as "…/../b"
    if (parts.size() <= 3 && !full.contains(QLatin1String(".."))) return full;
    return QStringLiteral("\u2026/") + QStringList(parts.mid(std::max<qsizetype>(0, parts.size() - 3))).join(QLatin1Char('/'));
}

QString function(const model::Snapshot& s, model::FrameId frame) {
    QString name = QString::fromUtf8(s.str(s.frames[frame].name));
    return name.isEmpty() ? QStringLiteral("(unnamed)") : name;
}

QString location(const model::Snapshot& s, model::FrameId frame, bool fullPath) {
    const model::Frame& f = s.frames[frame];
    const std::string_view file = s.str(f.filename);
    if (file.empty() || file == "??") return {};
    const bool python = file.size() >= 3 && file.compare(file.size() - 3, 3, ".py") == 0;
    QString where = fullPath ? QString::fromUtf8(file) : shortPath(file);
    if (!f.lineKnown) return where + QStringLiteral(":unknown");
    if (f.line == 0 && !python) return where;
    return where + QLatin1Char(':') + QString::number(f.line);
}

QString oneLine(const model::Snapshot& s, model::FrameId frame) {
    const QString where = location(s, frame, true);
    return where.isEmpty() ? function(s, frame) : function(s, frame) + QStringLiteral(" (") + where + QLatin1Char(')');
}

} // namespace memlens::views::frametext
