#pragma once
// Internal to the snapshot reader: the key strings of a snapshot, interned once so that dict keys
// compare as integers.
#include "memlens/model/Snapshot.h"
#include "memlens/model/StringTable.h"

#include <optional>

namespace memlens::model {

struct SnapshotKeys {
    StringId filename, name, line, action, addr, size, stream, time_us, frames, device_free, compile_context,
        user_metadata, segments, device_traces, device, address, total_size, allocated_size, active_size,
        requested_size, segment_type, segment_pool_id, is_expandable, blocks, state, history, real_size,
        allocator_settings, external_annotations, stage, large, host_segments, host_traces, trace_alloc_overflowed,
        trace_alloc_max_entries, fx_node_op, fx_node_name, fx_node_target, fx_original_trace,
        active_allocated, active_pending_free, active_awaiting_free, inactive;  // block states
    explicit SnapshotKeys(StringTable& s)
        : filename(s.intern("filename")), name(s.intern("name")), line(s.intern("line")), action(s.intern("action")),
          addr(s.intern("addr")), size(s.intern("size")), stream(s.intern("stream")), time_us(s.intern("time_us")),
          frames(s.intern("frames")), device_free(s.intern("device_free")),
          compile_context(s.intern("compile_context")), user_metadata(s.intern("user_metadata")),
          segments(s.intern("segments")), device_traces(s.intern("device_traces")), device(s.intern("device")),
          address(s.intern("address")), total_size(s.intern("total_size")), allocated_size(s.intern("allocated_size")),
          active_size(s.intern("active_size")), requested_size(s.intern("requested_size")),
          segment_type(s.intern("segment_type")), segment_pool_id(s.intern("segment_pool_id")),
          is_expandable(s.intern("is_expandable")), blocks(s.intern("blocks")), state(s.intern("state")),
          history(s.intern("history")), real_size(s.intern("real_size")),
          allocator_settings(s.intern("allocator_settings")), external_annotations(s.intern("external_annotations")),
          stage(s.intern("stage")), large(s.intern("large")), host_segments(s.intern("host_segments")),
          host_traces(s.intern("host_traces")), trace_alloc_overflowed(s.intern("trace_alloc_overflowed")),
          trace_alloc_max_entries(s.intern("trace_alloc_max_entries")), fx_node_op(s.intern("fx_node_op")),
          fx_node_name(s.intern("fx_node_name")), fx_node_target(s.intern("fx_node_target")),
          fx_original_trace(s.intern("fx_original_trace")), active_allocated(s.intern("active_allocated")),
          active_pending_free(s.intern("active_pending_free")), active_awaiting_free(s.intern("active_awaiting_free")),
          inactive(s.intern("inactive")) {}
    // A block's state from its name (strings are interned: the ids compare); nullopt when unknown.
    std::optional<BlockState> blockState(StringId name) const {
        if (name == active_allocated) return BlockState::ActiveAllocated;
        if (name == active_pending_free || name == active_awaiting_free) return BlockState::ActivePendingFree;
        if (name == inactive) return BlockState::Inactive;
        return std::nullopt;
    }
};

} // namespace memlens::model
