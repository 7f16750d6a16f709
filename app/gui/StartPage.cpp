#include "StartPage.h"

#include "RecentFiles.h"

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

namespace memlens::gui {

StartPage::StartPage(RecentFiles* recent, const QString& examplePath, QWidget* parent)
    : QWidget(parent), m_recent(recent), m_example(examplePath) {
    setObjectName(QStringLiteral("startPage"));
    auto* outer = new QHBoxLayout(this);
    outer->addStretch(1);
    auto* column = new QWidget(this);
    column->setMaximumWidth(680);
    column->setMinimumWidth(420);
    outer->addWidget(column, 3);
    outer->addStretch(1);

    auto* v = new QVBoxLayout(column);
    v->setSpacing(10);
    v->addStretch(1);
    auto* title = new QLabel(tr("memlens"), column);
    QFont tf = title->font();
    tf.setPointSizeF(tf.pointSizeF() * 2.2);
    tf.setBold(true);
    title->setFont(tf);
    v->addWidget(title);
    auto* subtitle = new QLabel(tr("Where the GPU memory of a PyTorch job goes, and who keeps it."), column);
    subtitle->setStyleSheet(QStringLiteral("color: #555;"));
    v->addWidget(subtitle);
    v->addSpacing(12);

    auto* buttons = new QHBoxLayout;
    auto* open = new QPushButton(style()->standardIcon(QStyle::SP_DialogOpenButton), tr("Open snapshot…"), column);
    open->setDefault(true);
    connect(open, &QPushButton::clicked, this, &StartPage::openRequested);
    buttons->addWidget(open);
    auto* example = new QPushButton(tr("Open the example"), column);
    example->setEnabled(!m_example.isEmpty());
    example->setToolTip(m_example.isEmpty() ? tr("The bundled example.pickle was not found")
                                            : tr("A simulated training run with a leak and an out-of-memory error\n%1")
                                                  .arg(QDir::toNativeSeparators(m_example)));
    connect(example, &QPushButton::clicked, this, [this] { emit fileRequested(m_example); });
    buttons->addWidget(example);
    buttons->addStretch(1);
    v->addLayout(buttons);
    auto* drop = new QLabel(tr("…or drop snapshot files anywhere on this window."), column);
    drop->setStyleSheet(QStringLiteral("color: #777;"));
    v->addWidget(drop);
    v->addSpacing(12);

    m_recentTitle = new QLabel(tr("<b>Recent files</b>"), column);
    v->addWidget(m_recentTitle);
    m_list = new QListWidget(column);
    m_list->setFrameShape(QFrame::NoFrame);
    m_list->setMaximumHeight(220);
    m_list->setStyleSheet(QStringLiteral("QListWidget { background: transparent; } "
                                         "QListWidget::item { padding: 3px; }"));
    connect(m_list, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { emit fileRequested(item->data(Qt::UserRole).toString()); });
    connect(m_list, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { emit fileRequested(item->data(Qt::UserRole).toString()); });
    v->addWidget(m_list);
    v->addSpacing(12);

    auto* how = new QLabel(column);
    how->setTextFormat(Qt::RichText);
    how->setWordWrap(true);
    how->setText(tr("<b>Recording a snapshot</b><pre style='background:#f4f4f4'>"
                    "torch.cuda.memory._record_memory_history(max_entries=100_000)\n"
                    "...  # train, or reproduce the out-of-memory error\n"
                    "torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")</pre>"));
    v->addWidget(how);
    v->addStretch(2);

    connect(m_recent, &RecentFiles::changed, this, &StartPage::refreshRecent);
    refreshRecent();
}

void StartPage::refreshRecent() {
    m_list->clear();
    const QStringList files = m_recent->files();
    for (const QString& path : files) {
        const QFileInfo info(path);
        auto* item = new QListWidgetItem(QStringLiteral("%1   —   %2").arg(info.fileName(), QDir::toNativeSeparators(info.absolutePath())),
                                         m_list);
        item->setData(Qt::UserRole, path);
        item->setToolTip(QDir::toNativeSeparators(path));
        if (!info.exists()) {
            item->setForeground(QColor(0x99, 0x99, 0x99));
            item->setToolTip(tr("%1 (no longer exists)").arg(QDir::toNativeSeparators(path)));
        }
    }
    m_recentTitle->setVisible(!files.isEmpty());
    m_list->setVisible(!files.isEmpty());
}

} // namespace memlens::gui
