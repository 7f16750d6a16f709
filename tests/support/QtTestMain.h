#pragma once
// The main() of the in-process Qt test suites (tests/views, tests/app), instead of QTEST_MAIN: the
// same screen on every machine, set before the application object exists:
//   - the offscreen platform, unless QT_QPA_PLATFORM names another (e.g. xcb under xvfb-run);
//   - 96 dpi: QT_FONT_DPI=96 and Qt::AA_Use96Dpi, no high-dpi scale factor from the environment.
//
//   MEMLENS_GUI_TEST_MAIN(TestClass)   a QApplication: suites that show widgets
//   MEMLENS_CORE_TEST_MAIN(TestClass)  a QCoreApplication: tests/views/core (Qt-free code, no
//                                      widgets, no GUI platform) and suites that need no GUI
#include <QCoreApplication>
#include <QTest>

namespace memlens::test {

inline void forceTestScreen() {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    qputenv("QT_FONT_DPI", "96");
    qunsetenv("QT_SCALE_FACTOR");
    qunsetenv("QT_SCREEN_SCALE_FACTORS");
    qunsetenv("QT_AUTO_SCREEN_SCALE_FACTOR");
    QCoreApplication::setAttribute(Qt::AA_Use96Dpi);
}

template <typename App, typename Test>
int runTests(int argc, char** argv) {
    forceTestScreen();
    App app(argc, argv);
    app.setAttribute(Qt::AA_Use96Dpi);
    Test test;
    return QTest::qExec(&test, argc, argv);
}

} // namespace memlens::test

#define MEMLENS_CORE_TEST_MAIN(TestClass) \
    int main(int argc, char** argv) { return memlens::test::runTests<QCoreApplication, TestClass>(argc, argv); }

// QApplication is named only where the macro is used: suites that link no widgets can include this.
#define MEMLENS_GUI_TEST_MAIN(TestClass) \
    int main(int argc, char** argv) { return memlens::test::runTests<QApplication, TestClass>(argc, argv); }
