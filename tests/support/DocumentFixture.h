#pragma once
// Documents for the view and window tests: the synthetic snapshot, a trace of TraceFixture.h, the
// real fixtures and the bundled example, each opened as the window opens a file.
#include "NewerSnapshot.h"
#include "Oracle.h"
#include "StateFixture.h"
#include "TraceFixture.h"

#include "core/LoadedSnapshot.h"
#include "document/SnapshotDocument.h"

#include <QDir>
#include <QFileInfo>
#include <QString>

#include <memory>
#include <optional>

namespace viewtest {

inline std::unique_ptr<memlens::views::SnapshotDocument> syntheticDocument() {
    auto loaded = memlens::views::LoadedSnapshot::fromSnapshot(syntheticSnapshot(), "synthetic.pickle");
    return std::make_unique<memlens::views::SnapshotDocument>(loaded);
}

// The snapshot of NewerSnapshot.h (pinned host memory, private pools, metadata, FX frames, an
// overflowed ring buffer) as a document.
inline std::unique_ptr<memlens::views::SnapshotDocument> newerDocument() {
    auto loaded = memlens::views::LoadedSnapshot::fromSnapshot(synth::read(newer::snapshot()), "newer.pickle");
    return std::make_unique<memlens::views::SnapshotDocument>(loaded);
}

inline QString fixture(const char* name) { return QDir(QStringLiteral(MEMLENS_SNAPSHOTS_DIR)).filePath(QString::fromLatin1(name)); }
inline const char* kOomFixture = "Constructor-Sun__code_location__memory_snapshot.pickle";

// The real fixture as a document, or nullptr when the snapshots directory is absent.
inline std::unique_ptr<memlens::views::SnapshotDocument> fixtureDocument(const char* name = kOomFixture) {
    const QString path = fixture(name);
    if (!QFileInfo::exists(path)) return nullptr;
    auto loaded = memlens::views::LoadedSnapshot::load(path.toStdString(), {});
    return std::make_unique<memlens::views::SnapshotDocument>(loaded);
}

// The oom entry of the real oom fixture as the oracle reads it (its device, index, size and the
// totals right after it); nullopt if the oracle failed or found none.
inline std::optional<oracle::Entry> fixtureOom(const char* name = kOomFixture) {
    auto ooms = oracle::entries(fixture(name).toStdString(), "oom");
    if (!ooms || ooms->empty()) return std::nullopt;
    return ooms->front();
}

inline std::unique_ptr<memlens::views::SnapshotDocument> exampleDocument() {
    const QString path = QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle");
    auto loaded = memlens::views::LoadedSnapshot::load(path.toStdString(), {});
    return std::make_unique<memlens::views::SnapshotDocument>(loaded);
}

} // namespace viewtest

namespace tracetest {

inline std::unique_ptr<memlens::views::SnapshotDocument> document(const std::vector<Entry>& entries,
                                                                  const std::vector<Note>& notes = {}) {
    return std::make_unique<memlens::views::SnapshotDocument>(load(entries, notes));
}

} // namespace tracetest
