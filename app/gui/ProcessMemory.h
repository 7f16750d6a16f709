#pragma once
// How the window's process takes memory from the system.

namespace memlens::gui {

// Makes glibc give large blocks (256 KiB and more) back to the system as soon as they are freed.
// By default its threshold for that rises to the largest block freed so far (up to 32 MiB), after
// which the many large, short-lived arrays of loading and analysing a trace (pairing maps, sort
// buffers, per-entry series) stay in the heap once freed and keep the resident memory high: on
// the 605 MB repeated real trace the window's peak was 518 MB with glibc's default and 502 MB
// with this, the memory resident once every job is idle 518 MB against 460 MB. Call it once, first thing in
// main(); a no-op where the C library is not glibc.
void giveLargeBlocksBack();

} // namespace memlens::gui
