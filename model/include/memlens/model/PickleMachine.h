#pragma once
// A pickle machine that understands only data: protocols 0 to 5, every opcode that builds
// dicts, lists, tuples, sets, strings, bytes, numbers, booleans and None. Opcodes that import
// or call anything are refused with an error naming the opcode and its byte offset.
#include "memlens/model/ByteReader.h"
#include "memlens/model/PickleDocument.h"

#include <atomic>
#include <functional>
#include <unordered_map>
#include <vector>

namespace memlens::model {

// Lets a reader replace finished containers by compact domain objects while loading.
class PickleHooks {
public:
    virtual ~PickleHooks() = default;
    // Called once for each container node when it is first stored into another container
    // (or returned at STOP). Returns the value to store instead (or v itself).
    virtual Value collapse(PickleDocument& doc, Value v) = 0;
};

struct PickleLimits {
    uint32_t maxDepth = 1000;        // containers nested deeper are refused
    size_t maxStack = size_t(1) << 25;  // values on the machine's stack at once
    size_t maxMarks = size_t(1) << 20;  // open MARKs at once
    size_t maxSparseMemo = size_t(1) << 22;
};

class PickleMachine {
public:
    PickleMachine(ByteReader& in, PickleDocument& doc, PickleHooks* hooks = nullptr, PickleLimits limits = {});

    using Progress = std::function<void(uint64_t offset, uint64_t size)>;
    // Runs to STOP and returns the top of the stack. Throws ParseError or Cancelled.
    Value run(const Progress& progress = {}, const std::atomic<bool>* cancel = nullptr);

    int protocol() const { return protocol_; }

private:
    [[noreturn]] void fail(const std::string& what) const;
    void push(Value v);
    Value pop();
    Value& top();
    size_t markBase();  // pops the last MARK and returns the stack index it points to
    Value store(Value v);  // applies collapsing and depth tracking to a value being stored
    void appendTo(Value container, size_t from);  // moves stack[from..] into the container
    void memoPut(uint64_t index);
    Value memoGet(uint64_t index);
    Value readLong(const uint8_t* p, uint64_t n);
    std::string readLine();
    Value parseDecimal(const std::string& text, bool allowBoolForm);
    Value makeTuple(size_t from);
    Value makeString(const uint8_t* p, uint64_t n, bool bytes);

    ByteReader& in_;
    PickleDocument& doc_;
    PickleHooks* hooks_;
    PickleLimits limits_;
    std::vector<Value> stack_;
    std::vector<size_t> marks_;
    std::vector<Value> memo_;
    std::vector<uint8_t> memoSet_;
    std::unordered_map<uint64_t, Value> sparseMemo_;
    uint64_t opOffset_ = 0;
    int protocol_ = 0;
};

} // namespace memlens::model
