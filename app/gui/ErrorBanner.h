#pragma once
// A non-modal message strip at the top of the window: a file that could not be opened, with the
// reader's one-line message. The window stays usable; the banner goes on dismiss or on the next
// successful open.
#include <QFrame>

class QLabel;

namespace memlens::gui {

class ErrorBanner : public QFrame {
    Q_OBJECT
public:
    explicit ErrorBanner(QWidget* parent = nullptr);

    void showError(const QString& message);
    QString message() const;

public slots:
    void dismiss();

private:
    QLabel* m_text = nullptr;
};

} // namespace memlens::gui
