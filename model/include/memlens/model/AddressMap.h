#pragma once
// A hash map from addresses (uint64_t) to small values, for the passes that pair every free of a
// trace with its alloc: open addressing with linear probing and backward-shift deletion, so that
// the millions of insert/erase pairs of a long trace allocate nothing (std::unordered_map makes
// and frees a node for each) and stay in a few cache lines. Any key is allowed, ~0 included.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memlens::model {

template <typename V>
class AddressMap {
public:
    // Room for twice the expected keys: short probe runs for a map that keeps growing and shrinking.
    explicit AddressMap(size_t expected = 1024) { rehash(std::bit_ceil(std::max<size_t>(16, expected * 2))); }
    // Room for the expected keys at a load of at most 3/4 (where it grows): half the slots of the
    // above when they would be many (a state of 200,000 blocks: 12 MB of slots instead of 25).
    static AddressMap compact(size_t expected) {
        AddressMap m(0);
        m.rehash(std::bit_ceil(std::max<size_t>(16, expected + expected / 3 + 1)));
        return m;
    }

    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    size_t memoryBytes() const { return m_slots.capacity() * sizeof(Slot); }

    // The value at key, or nullptr.
    V* find(uint64_t key) {
        for (size_t i = slot(key);; i = (i + 1) & m_mask) {
            Slot& s = m_slots[i];
            if (!s.used) return nullptr;
            if (s.key == key) return &s.value;
        }
    }
    const V* find(uint64_t key) const { return const_cast<AddressMap*>(this)->find(key); }

    // The value at key, inserted as V{} when absent.
    V& operator[](uint64_t key) {
        if ((m_size + 1) * 4 > m_slots.size() * 3) rehash(m_slots.size() * 2);
        size_t i = slot(key);
        for (;; i = (i + 1) & m_mask) {
            Slot& s = m_slots[i];
            if (!s.used) break;
            if (s.key == key) return s.value;
        }
        Slot& s = m_slots[i];
        s.used = true;
        s.key = key;
        s.value = V{};
        ++m_size;
        return s.value;
    }

    // Removes key; false when it was absent.
    bool erase(uint64_t key) {
        size_t i = slot(key);
        for (;; i = (i + 1) & m_mask) {
            if (!m_slots[i].used) return false;
            if (m_slots[i].key == key) break;
        }
        // backward shift: move later members of the probe run into the hole when their home allows
        for (size_t j = (i + 1) & m_mask;; j = (j + 1) & m_mask) {
            Slot& s = m_slots[j];
            if (!s.used) break;
            const size_t home = slot(s.key);
            // s may move to i when i lies cyclically in [home, j)
            if (((j - home) & m_mask) >= ((j - i) & m_mask)) {
                m_slots[i] = std::move(s);
                i = j;
            }
        }
        m_slots[i].used = false;
        --m_size;
        return true;
    }

    // f(key, value) for every member, in no particular order.
    template <typename F>
    void forEach(F&& f) const {
        for (const Slot& s : m_slots)
            if (s.used) f(s.key, s.value);
    }
    // The same, with the values writable.
    template <typename F>
    void forEach(F&& f) {
        for (Slot& s : m_slots)
            if (s.used) f(s.key, s.value);
    }

private:
    struct Slot {
        uint64_t key = 0;
        V value{};
        bool used = false;
    };

    size_t slot(uint64_t key) const {
        // addresses are multiples of 512 with a few varying bits: mix them all (splitmix64's finaliser)
        key ^= key >> 30;
        key *= 0xbf58476d1ce4e5b9ull;
        key ^= key >> 27;
        key *= 0x94d049bb133111ebull;
        key ^= key >> 31;
        return static_cast<size_t>(key) & m_mask;
    }

    void rehash(size_t capacity) {
        std::vector<Slot> old = std::move(m_slots);
        m_slots.assign(capacity, Slot{});
        m_mask = capacity - 1;
        m_size = 0;
        for (Slot& s : old)
            if (s.used) (*this)[s.key] = std::move(s.value);
    }

    std::vector<Slot> m_slots;
    size_t m_mask = 0;
    size_t m_size = 0;
};

} // namespace memlens::model
