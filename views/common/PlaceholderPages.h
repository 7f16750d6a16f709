#pragma once
// A view's two faces: a greyed, centred line saying why there is nothing to show ("No snapshot
// open", "Nothing reserved on device 1"), or the view's content. The views own one each.
#include <QStackedWidget>

class QLabel;

namespace memlens::views {

class PlaceholderPages : public QStackedWidget {
    Q_OBJECT
public:
    explicit PlaceholderPages(QWidget* parent = nullptr);

    // The content page (owned from then on); call once.
    void setContent(QWidget* content);
    QWidget* content() const { return m_content; }
    QLabel* label() const { return m_label; }

    void showPlaceholder(const QString& text);
    void showContent();
    bool isShowingPlaceholder() const;
    // The placeholder's text while it is shown; empty while the content is.
    QString placeholderText() const;

private:
    QLabel* m_label = nullptr;
    QWidget* m_content = nullptr;
};

} // namespace memlens::views
