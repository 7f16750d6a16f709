#pragma once
// Retained-graph scans for the graph view tests: real ones, made once per test process by
// tests/views/jobs/graph_fixture.py with Debian's torch (a residual network of 6 identical blocks
// whose eval outputs are kept: one more full graph per eval iteration), and hand-built ones.
#include "Oracle.h"

#include "memlens/model/GraphScans.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QTemporaryDir>

#include <cstdio>
#include <memory>
#include <sys/wait.h>
#include <optional>

#ifndef MEMLENS_PYTHON
#define MEMLENS_PYTHON "/usr/bin/python3"
#endif

namespace graphfixture {

struct Real {
    std::shared_ptr<const memlens::model::GraphScans> scans;
    QString why;  // when scans is null: why (no torch: the tests skip)
};

// The scans of graph_fixture.py (made on first use; about 3 s).
inline const Real& real() {
    static const Real r = [] {
        Real out;
        static QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("scans.json"));
        const oracle::CommandResult run = oracle::runCommand(
            oracle::shellQuoted(MEMLENS_PYTHON) + " " +
            oracle::shellQuoted(MEMLENS_SOURCE_DIR "/tests/views/jobs/graph_fixture.py") + " " +
            oracle::shellQuoted(file.toStdString()) + " 2>&1");
        const int status = run.status;
        const QByteArray output = QByteArray::fromStdString(run.output);
        if (status == -1 || !WIFEXITED(status)) {
            out.why = QStringLiteral("the fixture job did not finish");
            return out;
        }
        const int exitCode = WEXITSTATUS(status);
        if (exitCode == 77) {
            out.why = QStringLiteral("%1 has no torch: no real graph").arg(QStringLiteral(MEMLENS_PYTHON));
            return out;
        }
        QFile f(file);
        if (exitCode != 0 || !f.open(QIODevice::ReadOnly)) {
            out.why = QStringLiteral("the fixture job failed: ") + QString::fromUtf8(output.right(600));
            return out;
        }
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        std::vector<memlens::model::SessionIteration> its;
        int64_t i = 0;
        for (const auto& ph : o.value(QStringLiteral("iterations")).toArray()) {
            memlens::model::SessionIteration it;
            it.index = ++i;
            it.phase = ph.toString().toStdString();
            its.push_back(it);
        }
        std::vector<memlens::model::GraphScanData> scans;
        for (const auto& s : o.value(QStringLiteral("scans")).toArray()) {
            const QJsonObject so = s.toObject();
            const QByteArray text = QJsonDocument(so).toJson(QJsonDocument::Compact);
            scans.push_back(memlens::model::parseGraphScanJson(text.toStdString(), so.value(QStringLiteral("iteration")).toInteger(),
                                                               so.value(QStringLiteral("phase")).toString().toStdString()));
        }
        out.scans = std::make_shared<const memlens::model::GraphScans>(std::move(scans), std::move(its));
        return out;
    }();
    return r;
}

// A graph by its root in the last scan of the real fixture.
inline std::shared_ptr<const memlens::model::RetainedGraph> realGraph(const std::string& root) {
    const auto& r = real();
    if (!r.scans || r.scans->scans().empty()) return nullptr;
    for (const auto& g : r.scans->scans().back().graphs)
        if (g.root == root) return std::shared_ptr<const memlens::model::RetainedGraph>(r.scans, &g);
    return nullptr;
}

// Where the tests write screenshots (MEMLENS_SCREENSHOT_DIR), if anywhere.
inline QString screenshotDir() {
    const QString d = qEnvironmentVariable("MEMLENS_SCREENSHOT_DIR");
    if (!d.isEmpty()) QDir().mkpath(d);
    return d;
}

} // namespace graphfixture
