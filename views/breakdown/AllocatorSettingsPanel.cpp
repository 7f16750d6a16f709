#include "breakdown/AllocatorSettingsPanel.h"

#include <QHeaderView>
#include <QStringList>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace memlens::views {

AllocatorSettingsPanel::AllocatorSettingsPanel(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 6, 0, 0);
    v->setSpacing(4);
    m_title = new QLabel(tr("<b>Allocator settings</b> (allocator_settings of the snapshot; set with "
                            "PYTORCH_CUDA_ALLOC_CONF)"),
                         this);
    m_title->setTextFormat(Qt::RichText);
    v->addWidget(m_title);
    m_table = new QTreeWidget(this);
    m_table->setColumnCount(3);
    m_table->setHeaderLabels({tr("Setting"), tr("Value"), tr("What it does")});
    m_table->setRootIsDecorated(false);
    m_table->setWordWrap(true);
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionMode(QAbstractItemView::ContiguousSelection);
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_table->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_table->header()->setStretchLastSection(true);
    v->addWidget(m_table);
    setSnapshot(nullptr, 0);
}

void AllocatorSettingsPanel::setSnapshot(const model::Snapshot* snapshot, int device) {
    m_table->clear();
    const auto lines = snapshot ? model::describeSettings(*snapshot, device) : std::vector<model::SettingLine>{};
    for (const auto& l : lines) {
        auto* item = new QTreeWidgetItem(m_table);
        item->setText(0, QString::fromStdString(l.key));
        const QString value = QString::fromStdString(l.value);
        item->setText(1, value.isEmpty() ? tr("(empty)") : value);
        item->setText(2, QString::fromStdString(l.meaning));
        item->setToolTip(2, QString::fromStdString(l.meaning));
        item->setToolTip(1, value);
    }
    // tall enough for every row: the page scrolls, not the table
    int height = m_table->header()->sizeHint().height() + 2 * m_table->frameWidth() + 4;
    for (int i = 0; i < m_table->topLevelItemCount(); ++i)
        height += std::max(m_table->sizeHintForRow(i), m_table->fontMetrics().height() + 6);
    m_table->setFixedHeight(height);
    setVisible(!lines.empty());
}

QStringList AllocatorSettingsPanel::rowTexts() const {
    QStringList out;
    for (int i = 0; i < m_table->topLevelItemCount(); ++i)
        out << m_table->topLevelItem(i)->text(0) + QStringLiteral(" = ") + m_table->topLevelItem(i)->text(1);
    return out;
}

} // namespace memlens::views
