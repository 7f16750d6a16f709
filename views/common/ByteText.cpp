#include "common/ByteText.h"

#include "memlens/model/ByteFormat.h"

#include <QRegularExpression>

#include <cmath>

namespace memlens::views {

namespace {
constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
constexpr int kUnitCount = 6;

int unitFor(double magnitude) {
    int u = 0;
    while (u + 1 < kUnitCount && magnitude >= 1024.0) {
        magnitude /= 1024.0;
        ++u;
    }
    return u;
}
} // namespace

QString formatBytes(double bytes) {
    const double mag = std::fabs(bytes);
    const auto whole = static_cast<uint64_t>(std::min(mag, 1.8e19) + 0.5);
    const QString text = QString::fromStdString(model::formatBytes(whole));
    return bytes < 0 && whole > 0 ? QStringLiteral("-") + text : text;
}

QString formatBytesShort(double bytes) {
    if (bytes == 0) return QStringLiteral("0");
    const int u = unitFor(std::fabs(bytes));
    const double v = bytes / std::pow(1024.0, u);
    QString s = QString::number(v, 'f', 2);
    while (s.endsWith(QLatin1Char('0'))) s.chop(1);
    if (s.endsWith(QLatin1Char('.'))) s.chop(1);
    return s + QLatin1Char(' ') + QLatin1String(kUnits[u]);
}

std::optional<uint64_t> parseBytes(const QString& text) {
    static const QRegularExpression re(QStringLiteral(R"(^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmgtp]?)(i?b?)\s*$)"),
                                       QRegularExpression::CaseInsensitiveOption);
    const auto m = re.match(text);
    if (!m.hasMatch()) return std::nullopt;
    bool ok = false;
    const double v = m.captured(1).toDouble(&ok);
    if (!ok) return std::nullopt;
    const QString unit = m.captured(2).toLower();
    if (unit.isEmpty() && !m.captured(3).isEmpty() && m.captured(3).compare(QLatin1String("b"), Qt::CaseInsensitive) != 0)
        return std::nullopt;  // "5i"
    int power = unit.isEmpty() ? 0 : QStringLiteral("kmgtp").indexOf(unit) + 1;
    const double bytes = v * std::pow(1024.0, power);
    if (!(bytes < 1.8e19)) return std::nullopt;
    return static_cast<uint64_t>(std::floor(bytes + 0.5));
}

} // namespace memlens::views
