#include "blockmap/BlockDescription.h"
#include "common/ByteText.h"

#include "memlens/model/StackFolding.h"
#include "common/ViewColors.h"


namespace memlens::views {

namespace {

// "8 387 608" with thin spaces between groups of three digits
QString exact(uint64_t b) {
    QString digits = QString::number(b);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, QChar(0x2009));
    return digits;
}

QString fileName(std::string_view path) {
    size_t slash = path.rfind('/');
    return QString::fromUtf8(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

} // namespace

QString blockKindLabel(model::StateBlockKind kind) {
    switch (kind) {
    case model::StateBlockKind::Allocated: return QStringLiteral("allocated");
    case model::StateBlockKind::BeforeRecording: return QStringLiteral("allocated before recording");
    case model::StateBlockKind::PendingFree: return QStringLiteral("pending free");
    case model::StateBlockKind::Free: return QStringLiteral("free");
    }
    return {};
}

QString hexAddress(uint64_t address) { return QStringLiteral("0x") + QString::number(address, 16); }

QString blockSummary(const model::StateBlock& b) {
    QString s = formatBytes(b.size) + QStringLiteral(" block at ") + hexAddress(b.address);
    if (b.allocIndex >= 0)
        s += QStringLiteral(", allocated at entry #") + QString::number(b.allocIndex);
    else if (b.kind == model::StateBlockKind::BeforeRecording)
        s += QStringLiteral(", allocated before recording");
    else if (b.kind == model::StateBlockKind::Free)
        s += QStringLiteral(", free");
    return s;
}

QString stackExcerptHtml(const model::Snapshot& s, model::StackId stack, int maxRows) {
    if (stack == 0 || stack >= s.stackCount() || s.stackSize(stack) == 0) return {};
    const auto rows = model::foldStack(s, stack);
    const model::FrameId* frames = s.stackBegin(stack);
    QString out;
    int shown = 0;
    for (const auto& r : rows) {
        if (shown == maxRows) {
            out += QStringLiteral("<br><span style='color:#888'>\u2026</span>");
            break;
        }
        if (shown) out += QStringLiteral("<br>");
        ++shown;
        if (r.folded) {
            out += QStringLiteral("<span style='color:#888'>") + QString::fromStdString(r.label).toHtmlEscaped() +
                   QStringLiteral("</span>");
            continue;
        }
        const model::Frame& f = s.frames[frames[r.first]];
        QString name = QString::fromUtf8(s.str(f.name));
        if (name.size() > 90) name = name.left(88) + QChar(0x2026);
        QString where = fileName(s.str(f.filename));
        if (r.kind != model::FrameKind::Native && !where.isEmpty())
            where += f.lineKnown ? QStringLiteral(":") + QString::number(f.line) : QStringLiteral(":unknown");
        const QString color = colors::frameKind(r.kind).name();
        const bool user = r.kind == model::FrameKind::User;
        out += QStringLiteral("<span style='color:%1'>%2%3%4</span>")
                   .arg(color, user ? QStringLiteral("<b>") : QString(), name.toHtmlEscaped(),
                        user ? QStringLiteral("</b>") : QString());
        if (!where.isEmpty() && where != QLatin1String("??"))
            out += QStringLiteral(" <span style='color:#777'>") + where.toHtmlEscaped() + QStringLiteral("</span>");
    }
    return out;
}

QString blockTooltip(const model::Snapshot* s, const model::StateSegment& seg, const BlockMapRect& rect, int maxRows) {
    const model::StateBlock& b = seg.blocks[rect.block];
    QString html = QStringLiteral("<div style='white-space:nowrap'>");
    if (rect.merged()) {
        uint64_t total = 0;
        for (uint32_t k = rect.firstBlock; k < rect.firstBlock + rect.blockCount; ++k) total += seg.blocks[k].size;
        html += QStringLiteral("<i>%1 blocks (%2) share this pixel; mostly %3. The biggest:</i><br>")
                    .arg(rect.blockCount)
                    .arg(formatBytes(total), blockKindLabel(rect.kind));
    }
    html += QStringLiteral("<b>%1</b> %2 block at <tt>%3</tt><br>")
                .arg(formatBytes(b.size), blockKindLabel(b.kind), hexAddress(b.address));
    html += QStringLiteral("size %1 B%2").arg(exact(b.size), b.sizeEstimated ? QStringLiteral(" (estimated from the trace)") : QString());
    if (b.kind != model::StateBlockKind::Free) {
        const uint64_t req = b.requestedSize;
        html += QStringLiteral("<br>requested %1 B").arg(exact(req));
        if (req > 0 && req < b.size) html += QStringLiteral(", rounding %1 B").arg(exact(b.size - req));
    }
    if (b.allocIndex >= 0)
        html += QStringLiteral("<br>allocated at entry #%1").arg(b.allocIndex);
    else if (b.kind == model::StateBlockKind::BeforeRecording)
        html += QStringLiteral("<br>allocated before the trace begins");
    html += QStringLiteral("<br><span style='color:#777'>segment <tt>%1</tt>, %2%3%4</span>")
                .arg(hexAddress(seg.address), formatBytes(seg.totalSize),
                     seg.isExpandable ? QStringLiteral(", expandable") : QString(),
                     seg.pool.isDefault() ? QString() : QStringLiteral(", ") + QString::fromStdString(model::poolName(seg.pool)));
    if (s && b.kind != model::StateBlockKind::Free) {
        QString stack = stackExcerptHtml(*s, b.stack, maxRows);
        html += stack.isEmpty() ? QStringLiteral("<br><i>no stack recorded</i>") : QStringLiteral("<hr>") + stack;
    }
    html += QStringLiteral("</div>");
    return html;
}

} // namespace memlens::views
