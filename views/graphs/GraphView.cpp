#include "graphs/GraphView.h"
#include "common/ByteText.h"

#include "common/PlaceholderPages.h"

#include "blockmap/BlockDescription.h"
#include "document/GraphScansDocument.h"
#include "document/SnapshotDocument.h"

#include <QApplication>
#include <QCheckBox>
#include <QGraphicsItem>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QSplitter>
#include <QStyleOptionGraphicsItem>
#include <QToolButton>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <functional>

namespace memlens::views {

namespace {

constexpr int kMaxLayoutNodes = 2500;   // folded nodes Graphviz is asked to place
constexpr int kAutoRepeatNodes = 24;    // fold repeated blocks by themselves above this many nodes
constexpr double kPadX = 8, kPadY = 5;

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString shapeOf(const model::SavedTensorInfo& t) {
    if (!t.inspected && t.shape.empty()) return {};
    QStringList d;
    for (int64_t v : t.shape) d << QString::number(v);
    return QLatin1Char('[') + d.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QString hex(uint64_t v) { return QStringLiteral("0x") + QString::number(v, 16); }

// Node colours: what a node keeps alive at a glance.
namespace palette {
QColor savedFill(double share) {  // share of the largest node's saved bytes, 0..1
    const QColor lo(0xff, 0xf1, 0xdc), hi(0xf2, 0x8c, 0x28);
    const double t = std::clamp(std::sqrt(share), 0.0, 1.0);
    return QColor::fromRgbF(lo.redF() + (hi.redF() - lo.redF()) * t, lo.greenF() + (hi.greenF() - lo.greenF()) * t,
                            lo.blueF() + (hi.blueF() - lo.blueF()) * t);
}
QColor releasedFill() { return QColor(0xee, 0xee, 0xee); }
QColor hookedFill() { return QColor(0xe9, 0xe0, 0xf7); }
QColor plainFill() { return QColor(0xfb, 0xfb, 0xfb); }
QColor leafFill() { return QColor(0xe2, 0xf2, 0xe4); }
QColor paramFill() { return QColor(0xe3, 0xee, 0xfa); }
QColor border() { return QColor(0x6b, 0x72, 0x80); }
QColor rootBorder() { return QColor(0xb3, 0x26, 0x1e); }
QColor selected() { return QColor(0x1a, 0x73, 0xe8); }
QColor edge() { return QColor(0x8a, 0x93, 0xa3); }
QColor cluster() { return QColor(0x6d, 0x4c, 0xc2); }
QColor text() { return QColor(0x20, 0x24, 0x2b); }
QColor subtle() { return QColor(0x5f, 0x66, 0x73); }
} // namespace palette

class NodeItem : public QGraphicsItem {
public:
    NodeItem(int index, QRectF rect, QString title, QString line, QColor fill, bool dashed, bool root,
             std::function<void(int)> clicked)
        : m_index(index), m_rect(rect), m_title(std::move(title)), m_line(std::move(line)), m_fill(fill), m_dashed(dashed),
          m_root(root), m_clicked(std::move(clicked)) {
        setAcceptHoverEvents(true);
        setCursor(Qt::PointingHandCursor);
        setZValue(2);
    }
    QRectF boundingRect() const override { return m_rect.adjusted(-3, -3, 3, 3); }
    void setSelectedNode(bool s) {
        m_selected = s;
        update();
    }
    int index() const { return m_index; }
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override {
        p->setRenderHint(QPainter::Antialiasing);
        QPen pen(m_selected ? palette::selected() : m_root ? palette::rootBorder() : palette::border(),
                 m_selected || m_root ? 2.0 : 1.0);
        if (m_dashed && !m_selected) pen.setStyle(Qt::DashLine);
        p->setPen(pen);
        p->setBrush(m_hover ? m_fill.darker(106) : m_fill);
        p->drawRoundedRect(m_rect, 5, 5);
        QFont f = QApplication::font();
        QFont bold = f;
        bold.setBold(true);
        const QFontMetricsF fm(f), bm(bold);
        const QRectF inner = m_rect.adjusted(kPadX, kPadY, -kPadX, -kPadY);
        p->setPen(palette::text());
        p->setFont(bold);
        p->drawText(QRectF(inner.left(), inner.top(), inner.width(), bm.height()), Qt::AlignHCenter | Qt::AlignTop,
                    bm.elidedText(m_title, Qt::ElideRight, inner.width()));
        p->setFont(f);
        p->setPen(palette::subtle());
        p->drawText(QRectF(inner.left(), inner.top() + bm.lineSpacing(), inner.width(), fm.height()),
                    Qt::AlignHCenter | Qt::AlignTop, fm.elidedText(m_line, Qt::ElideRight, inner.width()));
    }

protected:
    void hoverEnterEvent(QGraphicsSceneHoverEvent*) override {
        m_hover = true;
        update();
    }
    void hoverLeaveEvent(QGraphicsSceneHoverEvent*) override {
        m_hover = false;
        update();
    }
    void mousePressEvent(QGraphicsSceneMouseEvent* e) override {
        if (e->button() == Qt::LeftButton && m_clicked) m_clicked(m_index);
        e->accept();
    }

private:
    int m_index;
    QRectF m_rect;
    QString m_title, m_line;
    QColor m_fill;
    bool m_dashed, m_root;
    bool m_selected = false, m_hover = false;
    std::function<void(int)> m_clicked;
};

class ClusterItem : public QGraphicsItem {
public:
    ClusterItem(QRectF rect, QString label) : m_rect(rect), m_label(std::move(label)) { setZValue(0); }
    QRectF boundingRect() const override { return m_rect.adjusted(-2, -2, 2, 2); }
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override {
        p->setRenderHint(QPainter::Antialiasing);
        QColor fill = palette::cluster();
        fill.setAlpha(18);
        QPen pen(palette::cluster(), 1.2, Qt::DashLine);
        p->setPen(pen);
        p->setBrush(fill);
        p->drawRoundedRect(m_rect, 8, 8);
        QFont f = QApplication::font();
        f.setBold(true);
        p->setFont(f);
        p->setPen(palette::cluster());
        p->drawText(m_rect.adjusted(8, 4, -8, -4), Qt::AlignLeft | Qt::AlignTop, m_label);
    }

private:
    QRectF m_rect;
    QString m_label;
};

QPainterPath edgePath(const GraphLayoutResult::Edge& e) {
    QPainterPath path;
    if (e.points.empty()) return path;
    path.moveTo(e.points[0]);
    size_t i = 1;
    for (; i + 2 < e.points.size(); i += 3) path.cubicTo(e.points[i], e.points[i + 1], e.points[i + 2]);
    for (; i < e.points.size(); ++i) path.lineTo(e.points[i]);
    return path;
}

QPolygonF arrowHead(QPointF from, QPointF tip) {
    const QPointF d = tip - from;
    const double len = std::hypot(d.x(), d.y());
    if (len < 0.01) return {};
    const QPointF u = d / len, n(-u.y(), u.x());
    const double l = std::max(6.0, std::min(9.0, len)), w = l * 0.45;
    const QPointF base = tip - u * l;
    return QPolygonF({tip, base + n * w, base - n * w});
}

class GraphicsView : public QGraphicsView {
public:
    using QGraphicsView::QGraphicsView;
    bool userZoomed = false;  // the fit follows the view's size until the user zooms

protected:
    void wheelEvent(QWheelEvent* e) override {
        if (e->modifiers() & (Qt::ControlModifier | Qt::MetaModifier) || !verticalScrollBar()->isVisible()) {
            const double f = std::pow(1.0015, e->angleDelta().y());
            const double s = transform().m11() * f;
            if (s < 0.05 || s > 4) return;
            setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
            scale(f, f);
            userZoomed = true;
            e->accept();
            return;
        }
        QGraphicsView::wheelEvent(e);
    }
};

} // namespace

GraphView::GraphView(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(6, 6, 6, 6);
    outer->setSpacing(4);

    // the root on a line of its own (docks can be narrow), then the folding controls
    m_title = new QLabel(this);
    m_title->setTextFormat(Qt::RichText);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_title->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    outer->addWidget(m_title);
    auto* top = new QHBoxLayout;
    top->setSpacing(8);
    m_paramsBox = new QCheckBox(tr("Fold parameters"), this);
    m_paramsBox->setChecked(true);
    m_paramsBox->setToolTip(tr("Fold each parameter's AccumulateGrad node (and the transposes and views on the way to it) "
                               "into the node that uses it"));
    m_repeatsBox = new QCheckBox(tr("Fold blocks"), this);
    m_repeatsBox->setToolTip(tr("Show one copy of identical consecutive blocks (e.g. transformer layers) with a count; "
                                "on by itself for graphs of more than %1 nodes").arg(kAutoRepeatNodes));
    m_fit = new QToolButton(this);
    m_fit->setText(tr("Fit"));
    m_fit->setToolTip(tr("Show the whole graph (Ctrl+wheel zooms, drag pans)"));
    top->addWidget(m_paramsBox);
    top->addWidget(m_repeatsBox);
    top->addStretch(1);
    top->addWidget(m_fit);
    outer->addLayout(top);
    m_info = new QLabel(this);
    m_info->setEnabled(false);
    m_info->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    outer->addWidget(m_info);

    m_pages = new PlaceholderPages(this);

    m_split = new QSplitter(Qt::Vertical, m_pages);
    m_scene = new QGraphicsScene(this);
    m_scene->setItemIndexMethod(QGraphicsScene::NoIndex);
    m_view = new GraphicsView(m_scene, m_split);
    m_view->setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    m_view->setDragMode(QGraphicsView::ScrollHandDrag);
    m_view->setBackgroundBrush(QColor(0xff, 0xff, 0xff));
    m_view->setAlignment(Qt::AlignHCenter | Qt::AlignTop);
    m_view->viewport()->installEventFilter(this);
    m_split->addWidget(m_view);

    auto* details = new QWidget(m_split);
    auto* dv = new QVBoxLayout(details);
    dv->setContentsMargins(0, 0, 0, 0);
    dv->setSpacing(2);
    m_nodeTitle = new QLabel(details);
    m_nodeTitle->setTextFormat(Qt::RichText);
    m_nodeTitle->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    dv->addWidget(m_nodeTitle);
    m_tensors = new QTreeWidget(details);
    m_tensors->setRootIsDecorated(false);
    m_tensors->setUniformRowHeights(true);
    m_tensors->setAlternatingRowColors(true);
    m_tensors->setHeaderLabels({tr("Tensor"), tr("State"), tr("Shape"), tr("Dtype"), tr("Device"), tr("Bytes"), tr("Address")});
    m_tensors->header()->setStretchLastSection(true);
    m_tensors->setColumnWidth(0, 150);
    m_tensors->setColumnWidth(1, 70);
    m_tensors->setColumnWidth(2, 110);
    m_tensors->setColumnWidth(3, 70);
    m_tensors->setColumnWidth(4, 60);
    m_tensors->setColumnWidth(5, 70);
    m_tensors->setToolTip(tr("Click a CUDA tensor to select its block in the block map and its allocation in the timeline"));
    dv->addWidget(m_tensors, 1);
    m_status = new QLabel(details);
    m_status->setWordWrap(true);
    m_status->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    dv->addWidget(m_status);
    m_split->addWidget(details);
    m_split->setStretchFactor(0, 3);
    m_split->setStretchFactor(1, 1);
    details->setMinimumHeight(110);
    m_split->setCollapsible(0, false);
    m_pages->setContent(m_split);
    outer->addWidget(m_pages, 1);

    connect(m_paramsBox, &QCheckBox::toggled, this, &GraphView::setFoldParameters);
    connect(m_repeatsBox, &QCheckBox::toggled, this, [this](bool on) {
        if (!m_graph) return;
        setFoldRepeats(on);
    });
    connect(m_fit, &QToolButton::clicked, this, &GraphView::fitToView);
    connect(m_tensors, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) {
        activateTensor(m_tensors->indexOfTopLevelItem(item));
    });
    setGraph(nullptr);
}

GraphView::~GraphView() { GraphLayoutWorker::instance().cancel(this); }

void GraphView::setDocument(SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (m_doc) connect(m_doc, &QObject::destroyed, this, [this] { m_doc = nullptr; });
}

void GraphView::setGraphScans(GraphScansDocument* scans) {
    if (m_scans) disconnect(m_scans, nullptr, this, nullptr);
    m_scans = scans;
    if (m_scans) {
        connect(m_scans, &GraphScansDocument::graphSelected, this, &GraphView::graphFromScans);
        connect(m_scans, &GraphScansDocument::scansChanged, this, &GraphView::graphFromScans);
        connect(m_scans, &QObject::destroyed, this, [this] { setGraphScans(nullptr); });
    }
    graphFromScans();
}

void GraphView::graphFromScans() {
    if (!m_scans) {
        setGraph(nullptr);
        return;
    }
    const model::RetainedGraph* g = m_scans->selectedGraphData();
    // share the scans' ownership: the graph lives as long as the view shows it
    setGraph(g ? std::shared_ptr<const model::RetainedGraph>(m_scans->sharedScans(), g) : nullptr);
}

void GraphView::setGraph(std::shared_ptr<const model::RetainedGraph> graph) {
    m_graph = std::move(graph);
    m_selected = -1;
    rebuild();
}

void GraphView::setFoldParameters(bool fold) {
    if (fold == m_foldParameters) return;
    m_foldParameters = fold;
    const QSignalBlocker b(m_paramsBox);
    m_paramsBox->setChecked(fold);
    m_selected = -1;
    rebuild();
}

void GraphView::setFoldRepeats(bool fold) {
    if (m_foldRepeats == fold) return;
    m_foldRepeats = fold;
    const QSignalBlocker b(m_repeatsBox);
    m_repeatsBox->setChecked(fold);
    m_selected = -1;
    rebuild();
}

bool GraphView::foldParameters() const { return m_foldParameters; }
bool GraphView::foldRepeats() const { return m_repeatsBox->isChecked(); }

QString GraphView::titleText() const { return m_title->text(); }
QString GraphView::placeholderText() const { return m_pages->placeholderText(); }
QString GraphView::statusText() const { return m_status->text(); }

void GraphView::showPlaceholder(const QString& text) {
    m_pages->showPlaceholder(text);
}

void GraphView::setStatus(const QString& text) { m_status->setText(text); }

QString GraphView::nodeTitle(const model::FoldedNode& n) const {
    QString t = qs(n.name);
    if (n.copies > 1) t += QStringLiteral(" \u00d7%1").arg(n.copies);
    return t;
}

QString GraphView::nodeLine(const model::FoldedNode& n) const {
    const model::GraphNodeInfo& rep = m_graph->nodesList[n.representative];
    QStringList parts;
    if (!m_graph->savedListed) {
        parts << tr("saved: not listed");
    } else if (n.savedBytes > 0) {
        parts << tr("saved %1").arg(formatBytes(n.savedBytes));
    } else if (n.savedReleased > 0 && n.savedAlive == 0 && n.savedHooked == 0) {
        parts << tr("released");
    } else if (n.savedHooked > 0) {
        parts << tr("%1 hooked").arg(n.savedHooked);
    } else if (rep.isAccumulateGrad() && rep.variable) {
        parts << (rep.param ? tr("parameter %1").arg(shapeOf(*rep.variable)) : tr("leaf %1").arg(shapeOf(*rep.variable)));
    } else if (n.savedAlive > 0) {
        parts << tr("saved: parameters only");
    } else {
        parts << tr("nothing saved");
    }
    if (n.savedBytes > 0 && n.savedReleased > 0) parts << tr("%1 released").arg(n.savedReleased);
    if (n.parameters > 0) parts << (n.parameters == 1 ? tr("1 param") : tr("%1 params").arg(n.parameters));
    return parts.join(QStringLiteral(" \u00b7 "));
}

QString GraphView::nodeToolTip(int node) const {
    if (!m_graph || node < 0 || node >= static_cast<int>(m_folded.nodes.size())) return {};
    const model::FoldedNode& n = m_folded.nodes[static_cast<size_t>(node)];
    const model::GraphNodeInfo& rep = m_graph->nodesList[n.representative];
    QString t = QStringLiteral("<b>%1</b>").arg(qs(rep.name).toHtmlEscaped());
    if (n.copies > 1) t += tr(" in %1 identical blocks (figures over all of them)").arg(n.copies);
    if (n.representative == 0) t += tr("<br>the root: %1").arg(qs(m_graph->root).toHtmlEscaped());
    auto row = [](const model::SavedTensorInfo& s, const QString& state) {
        QString r = QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td align=right>%5</td></tr>")
                        .arg(qs(s.name).toHtmlEscaped(), state, shapeOf(s), qs(s.dtype), s.inspected || s.bytes ? formatBytes(s.bytes) : QString());
        return r;
    };
    QString rows;
    int count = 0;
    for (const auto& s : rep.saved) {
        if (++count > 12) break;
        QString state = qs(model::savedStateName(s.state));
        if (s.param) state += tr(" (parameter)");
        if (s.attribute) state += tr(" (ctx)");
        rows += row(s, state);
    }
    if (rep.variable) rows += row(*rep.variable, rep.param ? tr("parameter") : tr("leaf"));
    for (uint32_t p : n.parameterNodes)
        if (m_graph->nodesList[p].variable) rows += row(*m_graph->nodesList[p].variable, tr("parameter"));
    for (const auto& o : rep.outputs) rows += row(o, tr("output"));
    if (!rows.isEmpty())
        t += QStringLiteral("<table cellspacing=4><tr><th align=left>tensor</th><th align=left>state</th><th align=left>shape</th>"
                            "<th align=left>dtype</th><th align=right>bytes</th></tr>%1</table>")
                 .arg(rows);
    if (rep.saved.size() > 12) t += tr("… %1 more saved tensors").arg(rep.saved.size() - 12);
    if (!m_graph->savedListed) t += tr("<br><i>saved tensors: not listed (LibTorch does not expose them)</i>");
    else if (rep.saved.empty() && !rep.variable) t += tr("<br>nothing saved for backward");
    if (n.copies > 1) t += tr("<br>saved over the %1 blocks: %2").arg(n.copies).arg(formatBytes(n.savedBytes));
    if (n.parameters > 0) t += tr("<br>%1 parameters folded in (%2; not retained by the graph)").arg(n.parameters).arg(formatBytes(n.parameterBytes));
    return t;
}

void GraphView::rebuild() {
    GraphLayoutWorker::instance().cancel(this);
    m_folding.cancel();
    m_pendingGeneration = 0;
    const quint64 rebuild = ++m_rebuilds;
    // the graph shown stays (inert) while the next one is laid out, unless that takes a while:
    // stepping through scans does not flash a placeholder
    const bool showing = !m_pages->isShowingPlaceholder();
    auto clearScene = [this] {
        m_scene->clear();
        m_nodeItems.clear();
    };
    m_view->setInteractive(false);
    m_layout.reset();
    m_folded = {};
    m_listed.clear();
    m_tensors->clear();
    m_nodeTitle->clear();
    setStatus({});
    if (!m_graph) {
        clearScene();
        m_title->setText(tr("<b>Graph</b>"));
        m_info->clear();
        showPlaceholder(m_scans ? tr("Select a root in the Retained graphs panel to see its autograd graph.")
                                : tr("No session open.\nThe graph view shows the autograd graph a retained root keeps alive."));
        return;
    }
    const model::RetainedGraph& g = *m_graph;
    m_title->setText(tr("<b>%1</b> \u00b7 %2 retained \u00b7 %3 nodes")
                         .arg(qs(g.root).toHtmlEscaped(), formatBytes(g.retainedBytes))
                         .arg(g.nodes));
    m_title->setToolTip(qs(g.root));
    if (!g.hasDetail()) {
        clearScene();
        m_info->clear();
        showPlaceholder(g.detailOmitted ? tr("The scan left out the nodes of this graph: it keeps detail for the 50 largest graphs and "
                                             "the first of each kind. Select a larger root, or the first root of this group.")
                                        : tr("This graph has no node list."));
        return;
    }
    // folding (repeated blocks by themselves for big graphs) on a job; then the layout
    const std::optional<bool> foldRepeats = m_foldRepeats;
    const bool foldParameters = m_foldParameters;
    JobHandlers<std::shared_ptr<FoldOutcome>> h;
    h.done = [this](quint64, std::shared_ptr<FoldOutcome> outcome) { foldArrived(std::move(*outcome)); };
    h.failed = [this, clearScene](quint64, const QString& message) {
        clearScene();
        m_view->setInteractive(true);
        showPlaceholder(tr("The graph could not be folded: %1").arg(message));
        emit layoutFinished();
    };
    m_folding.start<std::shared_ptr<FoldOutcome>>(
        [graph = m_graph, foldRepeats, foldParameters](const JobControl&) {
            auto out = std::make_shared<FoldOutcome>();
            model::GraphFoldOptions opt;
            opt.parameters = foldParameters;
            out->repeats = foldRepeats.value_or(false);
            if (!foldRepeats) {
                opt.repeats = false;
                out->repeats = model::foldGraph(*graph, opt).nodes.size() > static_cast<size_t>(kAutoRepeatNodes);
            }
            opt.repeats = out->repeats;
            out->folded = model::foldGraph(*graph, opt);
            return out;
        },
        std::move(h), JobText{{}, QStringLiteral("fold this graph")});
    const QString waiting = tr("Laying out %1 nodes\u2026").arg(g.nodesList.size());
    if (!showing) {
        clearScene();
        showPlaceholder(waiting);
        return;
    }
    // the graph shown stays while the next one is folded and laid out, unless that takes a while
    QTimer::singleShot(250, this, [this, rebuild, clearScene] {
        if (m_rebuilds != rebuild || !isLayingOut()) return;
        clearScene();
        showPlaceholder(tr("Laying out %1 nodes\u2026").arg(m_folded.nodes.empty() ? m_graph->nodesList.size() : m_folded.nodes.size()));
    });
}

void GraphView::foldArrived(FoldOutcome outcome) {
    if (!m_graph) return;
    const model::RetainedGraph& g = *m_graph;
    const bool repeats = outcome.repeats;
    {
        const QSignalBlocker b(m_repeatsBox);
        m_repeatsBox->setChecked(repeats);
    }
    m_folded = std::move(outcome.folded);

    QString info = tr("%1 of %2 nodes shown").arg(m_folded.nodes.size()).arg(g.nodesList.size());
    if (m_folded.foldedParameters) info += tr(" \u00b7 %1 parameters folded").arg(m_folded.foldedParameters);
    for (const auto& r : m_folded.repeats) info += QStringLiteral(" \u00b7 ") + qs(r.label);
    if (g.truncated) info += tr(" \u00b7 the walk was cut short");
    if (!g.savedListed) info += tr(" \u00b7 saved tensors: not listed (LibTorch does not expose them)");
    else if (g.backwardRan) info += tr(" \u00b7 backward ran: saved tensors released");
    m_info->setText(info);

    if (m_folded.nodes.size() > static_cast<size_t>(kMaxLayoutNodes)) {
        m_scene->clear();
        m_nodeItems.clear();
        showPlaceholder(tr("%1 nodes after folding: too many to lay out.%2")
                            .arg(m_folded.nodes.size())
                            .arg(repeats ? QString() : tr("\nTry folding repeated blocks.")));
        return;
    }
    // node sizes from their text
    QFont bold = font();
    bold.setBold(true);
    const QFontMetricsF fm(font()), bm(bold);
    auto input = std::make_shared<GraphLayoutInput>();
    m_nodeSizes.clear();
    for (const auto& n : m_folded.nodes) {
        const double w = std::max({bm.horizontalAdvance(nodeTitle(n)), fm.horizontalAdvance(nodeLine(n)), 70.0}) + 2 * kPadX + 2;
        const double h = bm.lineSpacing() + fm.height() + 2 * kPadY;
        m_nodeSizes.emplace_back(std::min(w, 320.0), h);
        input->nodes.push_back({m_nodeSizes.back().width(), h});
    }
    for (const auto& e : m_folded.edges) input->edges.push_back({static_cast<int>(e.from), static_cast<int>(e.to)});
    for (const auto& r : m_folded.repeats) {
        GraphLayoutInput::Cluster c;
        for (uint32_t v : r.nodes) c.nodes.push_back(static_cast<int>(v));
        c.label = qs(r.label);
        input->clusters.push_back(std::move(c));
    }
    if (m_pages->isShowingPlaceholder())
        showPlaceholder(tr("Laying out %1 nodes\u2026").arg(m_folded.nodes.size()));
    // Graphviz only on its one layout thread
    m_pendingGeneration = GraphLayoutWorker::instance().request(
        this, std::move(input), [this](quint64 gen, std::shared_ptr<const GraphLayoutResult> r) { layoutArrived(gen, std::move(r)); });
}

void GraphView::layoutArrived(quint64 generation, std::shared_ptr<const GraphLayoutResult> result) {
    if (generation != m_pendingGeneration) return;
    m_pendingGeneration = 0;
    m_layout = std::move(result);
    m_view->setInteractive(true);
    if (!m_layout->ok) {
        m_scene->clear();
        m_nodeItems.clear();
        showPlaceholder(m_layout->error);
        emit layoutFinished();
        return;
    }
    buildScene();
    m_pages->showContent();
    m_info->setText(m_info->text() + tr(" \u00b7 laid out in %1 ms").arg(std::lround(m_layout->seconds * 1000)));
    fitToView();
    if (m_selected < 0 && !m_folded.nodes.empty()) {
        // the node that saves the most, to start with
        int best = 0;
        for (size_t i = 0; i < m_folded.nodes.size(); ++i)
            if (m_folded.nodes[i].savedBytes > m_folded.nodes[static_cast<size_t>(best)].savedBytes) best = static_cast<int>(i);
        selectNode(best);
    }
    emit layoutFinished();
}

void GraphView::buildScene() {
    m_scene->clear();
    m_nodeItems.clear();
    const GraphLayoutResult& L = *m_layout;
    uint64_t maxSaved = 1;
    for (const auto& n : m_folded.nodes) maxSaved = std::max(maxSaved, n.savedBytes);
    for (size_t c = 0; c < L.clusters.size() && c < m_folded.repeats.size(); ++c)
        m_scene->addItem(new ClusterItem(L.clusters[c], qs(m_folded.repeats[c].label)));
    QPen edgePen(palette::edge(), 1.1);
    for (size_t i = 0; i < L.edges.size() && i < m_folded.edges.size(); ++i) {
        const auto& e = L.edges[i];
        if (e.points.empty()) continue;
        QPen pen = edgePen;
        if (m_folded.edges[i].count > 1) pen.setWidthF(1.8);
        auto* path = m_scene->addPath(edgePath(e), pen);
        path->setZValue(1);
        const QPointF from = e.points.back();
        const QPolygonF head = arrowHead(e.arrow ? from : e.points[e.points.size() > 1 ? e.points.size() - 2 : 0], e.arrow ? e.end : from);
        if (!head.isEmpty()) {
            auto* a = m_scene->addPolygon(head, QPen(palette::edge(), 1), palette::edge());
            a->setZValue(1);
        }
        if (m_folded.edges[i].count > 1) path->setToolTip(tr("%1 edges").arg(m_folded.edges[i].count));
    }
    for (size_t i = 0; i < m_folded.nodes.size() && i < L.nodes.size(); ++i) {
        const auto& n = m_folded.nodes[i];
        const model::GraphNodeInfo& rep = m_graph->nodesList[n.representative];
        QColor fill = palette::plainFill();
        bool dashed = false;
        if (n.savedBytes > 0) fill = palette::savedFill(static_cast<double>(n.savedBytes) / static_cast<double>(maxSaved));
        else if (n.savedHooked > 0) fill = palette::hookedFill();
        else if (n.savedReleased > 0) {
            fill = palette::releasedFill();
            dashed = true;
        } else if (rep.isAccumulateGrad()) fill = rep.param ? palette::paramFill() : palette::leafFill();
        auto* item = new NodeItem(static_cast<int>(i), L.nodes[i], nodeTitle(n), nodeLine(n), fill, dashed,
                                  n.representative == 0, [this](int v) { selectNode(v); });
        item->setToolTip(nodeToolTip(static_cast<int>(i)));
        m_scene->addItem(item);
        m_nodeItems.push_back(item);
    }
    m_scene->setSceneRect(L.bounds.adjusted(-12, -12, 12, 12));
}

void GraphView::fitToView() {
    if (!m_layout || !m_layout->ok) return;
    static_cast<GraphicsView*>(m_view)->userZoomed = false;
    const QRectF r = m_scene->sceneRect();
    m_view->resetTransform();
    const QSize vp = m_view->viewport()->size();
    if (r.isEmpty() || vp.isEmpty()) return;
    // the whole graph when its text stays legible; else the full width (or 1:1), scrolling down
    double s = std::min({1.0, vp.width() / r.width(), vp.height() / r.height()});
    if (s < 0.72) s = std::clamp(vp.width() / r.width(), 0.72, 1.0);
    m_view->scale(s, s);
    const int root = m_folded.nodeOf.empty() ? -1 : m_folded.nodeOf[0];
    if (root >= 0 && static_cast<size_t>(root) < m_layout->nodes.size()) m_view->centerOn(m_layout->nodes[static_cast<size_t>(root)].center().x(), r.top());
    m_fit->setEnabled(true);
}

void GraphView::selectNode(int node) {
    if (node < -1 || node >= static_cast<int>(m_folded.nodes.size())) node = -1;
    m_selected = node;
    for (QGraphicsItem* it : m_nodeItems) {
        auto* n = static_cast<NodeItem*>(it);
        n->setSelectedNode(n->index() == node);
    }
    fillTensorList();
    emit nodeSelected(node);
}

void GraphView::fillTensorList() {
    m_tensors->clear();
    m_listed.clear();
    if (!m_graph || m_selected < 0) {
        m_nodeTitle->setText(tr("Click a node to list its saved tensors."));
        return;
    }
    const model::FoldedNode& n = m_folded.nodes[static_cast<size_t>(m_selected)];
    const bool copies = n.copies > 1;
    auto add = [&](const model::SavedTensorInfo& s, const QString& state, int copy) {
        QString name = qs(s.name);
        if (copies) name = tr("block %1: %2").arg(copy + 1).arg(name);
        const bool knownBytes = (s.inspected || s.bytes) && !s.modifiedInPlace;
        auto* item = new QTreeWidgetItem(m_tensors, {name, state, shapeOf(s), qs(s.dtype), qs(s.device),
                                                     knownBytes ? formatBytes(s.bytes) : QString(), s.ptr ? hex(*s.ptr) : QString()});
        if (s.modifiedInPlace)
            item->setToolTip(1, tr("Modified in place after it was saved (a weight after optimizer.step(), say): still held, "
                                   "its bytes are not counted"));
        item->setTextAlignment(5, Qt::AlignRight | Qt::AlignVCenter);
        if (s.state != model::SavedState::Alive || s.param) item->setForeground(0, m_tensors->palette().color(QPalette::Disabled, QPalette::Text));
        if (s.ptr && s.isCuda()) item->setToolTip(0, tr("Click to select its block and allocation"));
        if (!s.note.empty() && !s.modifiedInPlace) item->setToolTip(1, qs(s.note));
        m_listed.push_back(s);
    };
    for (size_t c = 0; c < n.members.size(); ++c) {
        const model::GraphNodeInfo& nd = m_graph->nodesList[n.members[c]];
        for (const auto& s : nd.saved) {
            QString state = qs(model::savedStateName(s.state));
            if (s.param) state = tr("parameter");
            else if (s.attribute) state += tr(" (ctx)");
            if (s.modifiedInPlace) state = tr("modified");
            add(s, state, static_cast<int>(c));
        }
        if (nd.variable) add(*nd.variable, nd.param ? tr("parameter") : tr("leaf"), static_cast<int>(c));
        for (size_t i = 0; i < nd.outputs.size(); ++i) {
            model::SavedTensorInfo o = nd.outputs[i];
            if (o.name.empty()) o.name = "output[" + std::to_string(i) + "]";
            add(o, tr("output"), static_cast<int>(c));
        }
    }
    for (uint32_t p : n.parameterNodes) {
        const auto& v = m_graph->nodesList[p].variable;
        if (v) add(*v, tr("parameter"), 0);
    }
    QString title = QStringLiteral("<b>%1</b>").arg(qs(m_graph->nodesList[n.representative].name).toHtmlEscaped());
    if (copies) title += tr(" \u00b7 %1 identical blocks").arg(n.copies);
    if (!m_graph->savedListed) title += tr(" \u00b7 saved tensors: not listed (LibTorch does not expose them)");
    else if (m_listed.empty()) title += tr(" \u00b7 nothing saved for backward");
    else title += tr(" \u00b7 %1 saved").arg(formatBytes(n.savedBytes));
    m_nodeTitle->setText(title);
}

bool GraphView::activateTensor(int row) {
    if (row < 0 || row >= static_cast<int>(m_listed.size())) return false;
    return activateSavedTensor(m_listed[static_cast<size_t>(row)]);
}

bool GraphView::activateSavedTensor(const model::SavedTensorInfo& t) {
    emit savedTensorActivated(qs(t.name), t.ptr.value_or(0));
    if (!t.ptr) {
        setStatus(t.state == model::SavedState::Alive ? tr("%1 has no storage address.").arg(qs(t.name))
                                                      : tr("%1 is %2: it holds no memory.").arg(qs(t.name), qs(model::savedStateName(t.state))));
        return false;
    }
    if (!t.isCuda()) {
        setStatus(tr("%1 is on %2: not in the CUDA allocator.").arg(qs(t.name), qs(t.device.empty() ? "the CPU" : t.device)));
        return false;
    }
    if (!m_doc) {
        setStatus(tr("%1 at %2: no snapshot of this session is open to look its block up in.").arg(qs(t.name), hex(*t.ptr)));
        return false;
    }
    if (model::cudaDeviceIndex(t.device).value_or(0) != m_doc->device()) {
        // its address means nothing in another device's blocks
        setStatus(tr("%1 is on %2; the views show device %3: pick that device to find its block.")
                      .arg(qs(t.name), qs(t.device))
                      .arg(m_doc->device()));
        return false;
    }
    if (m_doc->isStatePending()) {
        setStatus(tr("%1 at %2: the allocator state is still being read; try again in a moment.").arg(qs(t.name), hex(*t.ptr)));
        return false;
    }
    const uint64_t ptr = *t.ptr;
    auto find = [ptr](const model::DeviceState& st) -> std::optional<model::StateBlock> {
        for (const auto& seg : st.segments) {
            if (ptr < seg.address || ptr >= seg.address + seg.totalSize) continue;
            for (const auto& b : seg.blocks)
                if (ptr >= b.address && ptr < b.address + b.size) return b;
        }
        return std::nullopt;
    };
    std::optional<model::StateBlock> block = find(m_doc->currentState());
    if (!block || block->kind == model::StateBlockKind::Free) {
        // not live at the current entry: as the snapshot ends
        const auto last = m_doc->finalState();
        if (auto b = find(last); b && b->kind != model::StateBlockKind::Free) block = b;
    }
    if (!block || block->kind == model::StateBlockKind::Free) {
        setStatus(tr("%1 at %2 is in no allocated block of this snapshot (device %3).").arg(qs(t.name), hex(ptr)).arg(m_doc->device()));
        return false;
    }
    m_doc->selectAllocation(block->stack, blockSummary(*block), block->address);
    if (block->allocIndex >= 0) m_doc->setCurrentEvent(block->allocIndex);
    setStatus(tr("%1: block at %2 (%3)%4")
                  .arg(qs(t.name), hex(block->address), formatBytes(block->size))
                  .arg(block->allocIndex >= 0 ? tr(", allocated at entry #%1").arg(block->allocIndex) : tr(", allocated before the trace")));
    emit blockSelected(block->address, block->allocIndex);
    return true;
}

bool GraphView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_view->viewport() && event->type() == QEvent::MouseButtonDblClick) {
        fitToView();
        return true;
    }
    if (watched == m_view->viewport() && event->type() == QEvent::Resize && !static_cast<GraphicsView*>(m_view)->userZoomed)
        fitToView();
    return QWidget::eventFilter(watched, event);
}

} // namespace memlens::views
