#pragma once
// Byte counts for people, in binary units (B, KiB, MiB, GiB, TiB), and back.
#include <QString>

#include <cstdint>
#include <optional>

namespace memlens::views {

// As model::formatBytes ("512 B", "16.5 MiB", "180 MiB"), with a minus sign below zero.
QString formatBytes(double bytes);
// For axis ticks: as few digits as the value needs: "0", "256 MiB", "1.25 GiB".
QString formatBytesShort(double bytes);
// "1.5 MiB", "2g", "2 GB" (read as GiB), "1024", "512k" -> bytes; nullopt for anything else.
std::optional<uint64_t> parseBytes(const QString& text);

} // namespace memlens::views
