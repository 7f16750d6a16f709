#include "AnnotationRows.h"


#include <algorithm>

namespace memlens::model {

AnnotationRows::AnnotationRows(const PickleDocument& doc, const SnapshotKeys& keys, uint64_t fileBytes)
    : doc_(doc), k_(keys) {
    // Address space for one annotation per 512 bytes of file (the agent's recordings have one
    // per 1,500), so that growing never copies them.
    rows_.reserve(static_cast<size_t>(std::min<uint64_t>(fileBytes / 512, uint64_t(1) << 26)));
}

std::optional<uint32_t> AnnotationRows::fromItems(const Value* items, size_t n) {
    if (n != 8) return std::nullopt;
    const Value *stage = nullptr, *name = nullptr, *device = nullptr, *time = nullptr;
    for (size_t i = 0; i < n; i += 2) {
        const Value& key = items[i];
        if (key.tag != Tag::Str) return std::nullopt;
        const Value** slot = key.ref == k_.stage     ? &stage
                             : key.ref == k_.name    ? &name
                             : key.ref == k_.device  ? &device
                             : key.ref == k_.time_us ? &time
                                                     : nullptr;
        if (!slot || *slot) return std::nullopt;  // another key, or a key twice
        *slot = &items[i + 1];
    }
    if (stage->tag != Tag::Str || name->tag != Tag::Str || !device->isInt() || !time->isInt()) return std::nullopt;
    rows_.push_back(make(doc_.strings, *stage, *name, device, time));
    return static_cast<uint32_t>(rows_.size() - 1);
}

Annotation AnnotationRows::make(const StringTable& strings, const Value& stage, const Value& name, const Value* device,
                                const Value* time) {
    Annotation a;
    a.start = strings.view(stage.ref) == "START";
    a.name = name.ref;
    if (device && device->isInt()) a.device = static_cast<int>(device->asInt());
    if (time && time->isInt()) a.timeUs = time->asInt();
    return a;
}

} // namespace memlens::model
