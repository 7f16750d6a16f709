#pragma once
// Test helper: writes Python-like values as pickles (protocols 0 to 5), the way Python's and
// torch's picklers do, with shared objects memoised. Values given here are the expected results.
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace testpickle {

struct Py;
using P = std::shared_ptr<Py>;

struct Py {
    enum Kind { None, Bool, Int, UInt, Float, Str, List, Dict, Tuple } kind = None;
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0;
    std::string s;
    std::vector<P> items;
    std::vector<std::pair<P, P>> kv;
};

inline P none() { return std::make_shared<Py>(); }
inline P boolean(bool b) {
    auto p = std::make_shared<Py>();
    p->kind = Py::Bool;
    p->i = b;
    return p;
}
inline P num(int64_t v) {
    auto p = std::make_shared<Py>();
    p->kind = Py::Int;
    p->i = v;
    return p;
}
inline P unum(uint64_t v) {
    auto p = std::make_shared<Py>();
    p->kind = Py::UInt;
    p->u = v;
    return p;
}
inline P real(double v) {
    auto p = std::make_shared<Py>();
    p->kind = Py::Float;
    p->f = v;
    return p;
}
inline P str(std::string v) {
    auto p = std::make_shared<Py>();
    p->kind = Py::Str;
    p->s = std::move(v);
    return p;
}
inline P list(std::vector<P> items = {}) {
    auto p = std::make_shared<Py>();
    p->kind = Py::List;
    p->items = std::move(items);
    return p;
}
inline P tuple(std::vector<P> items) {
    auto p = std::make_shared<Py>();
    p->kind = Py::Tuple;
    p->items = std::move(items);
    return p;
}
inline P dict(std::vector<std::pair<std::string, P>> kv) {
    auto p = std::make_shared<Py>();
    p->kind = Py::Dict;
    for (auto& [k, v] : kv) p->kv.emplace_back(str(k), v);
    return p;
}

class Writer {
public:
    explicit Writer(int protocol) : proto_(protocol) {}

    std::string dumps(const P& v) {
        out_.clear();
        memo_.clear();
        if (proto_ >= 2) {
            out_ += '\x80';
            out_ += static_cast<char>(proto_);
        }
        save(v);
        out_ += '.';
        return out_;
    }

private:
    void le(uint64_t v, int n) {
        for (int k = 0; k < n; ++k) out_ += static_cast<char>((v >> (8 * k)) & 0xFF);
    }
    bool fromMemo(const Py* p) {
        auto it = memo_.find(p);
        if (it == memo_.end()) return false;
        if (proto_ == 0) {
            out_ += "g" + std::to_string(it->second) + "\n";
        } else if (it->second < 256) {
            out_ += 'h';
            out_ += static_cast<char>(it->second);
        } else {
            out_ += 'j';
            le(it->second, 4);
        }
        return true;
    }
    void memoize(const Py* p) {
        uint32_t idx = static_cast<uint32_t>(memo_.size());
        memo_[p] = idx;
        if (proto_ >= 4) {
            out_ += '\x94';
        } else if (proto_ == 0) {
            out_ += "p" + std::to_string(idx) + "\n";
        } else if (idx < 256) {
            out_ += 'q';
            out_ += static_cast<char>(idx);
        } else {
            out_ += 'r';
            le(idx, 4);
        }
    }
    void saveInt(int64_t v) {
        if (proto_ == 0) {
            out_ += "I" + std::to_string(v) + "\n";
        } else if (v >= 0 && v < 256) {
            out_ += 'K';
            out_ += static_cast<char>(v);
        } else if (v >= 0 && v < 65536) {
            out_ += 'M';
            le(static_cast<uint64_t>(v), 2);
        } else if (v >= INT32_MIN && v <= INT32_MAX) {
            out_ += 'J';
            le(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
        } else {
            out_ += '\x8a';
            out_ += '\x08';
            le(static_cast<uint64_t>(v), 8);
        }
    }
    void save(const P& p) {
        switch (p->kind) {
        case Py::None: out_ += 'N'; return;
        case Py::Bool:
            if (proto_ >= 2)
                out_ += p->i ? '\x88' : '\x89';
            else
                out_ += p->i ? "I01\n" : "I00\n";
            return;
        case Py::Int: saveInt(p->i); return;
        case Py::UInt:
            if (proto_ == 0) {
                out_ += "L" + std::to_string(p->u) + "L\n";
            } else {
                out_ += '\x8a';
                out_ += (p->u >> 63) ? '\x09' : '\x08';
                le(p->u, 8);
                if (p->u >> 63) out_ += '\0';
            }
            return;
        case Py::Float: {
            if (proto_ == 0) {
                char buf[64];
                std::snprintf(buf, sizeof buf, "F%.17g\n", p->f);
                out_ += buf;
                return;
            }
            uint64_t bits;
            std::memcpy(&bits, &p->f, 8);
            out_ += 'G';
            for (int k = 7; k >= 0; --k) out_ += static_cast<char>((bits >> (8 * k)) & 0xFF);
            return;
        }
        case Py::Str:
            if (fromMemo(p.get())) return;
            if (proto_ == 0) {
                out_ += 'V';
                for (unsigned char c : p->s) {
                    if (c == '\\' || c == '\n' || c >= 0x80) {
                        // raw-unicode-escape: our tests only use ASCII and escapes for these
                        char buf[8];
                        std::snprintf(buf, sizeof buf, "\\u%04x", c);
                        out_ += buf;
                    } else {
                        out_ += static_cast<char>(c);
                    }
                }
                out_ += '\n';
            } else if (proto_ >= 4 && p->s.size() < 256) {
                out_ += '\x8c';
                out_ += static_cast<char>(p->s.size());
                out_ += p->s;
            } else {
                out_ += 'X';
                le(p->s.size(), 4);
                out_ += p->s;
            }
            memoize(p.get());
            return;
        case Py::Tuple: {
            if (fromMemo(p.get())) return;
            if (proto_ >= 2 && p->items.size() >= 1 && p->items.size() <= 3) {
                for (const auto& x : p->items) save(x);
                out_ += static_cast<char>(0x84 + p->items.size());
            } else if (p->items.empty() && proto_ >= 1) {
                out_ += ')';
            } else {
                out_ += '(';
                for (const auto& x : p->items) save(x);
                out_ += 't';
            }
            memoize(p.get());
            return;
        }
        case Py::List: {
            if (fromMemo(p.get())) return;
            if (proto_ == 0) {
                out_ += "(l";
                memoize(p.get());
                for (const auto& x : p->items) {
                    save(x);
                    out_ += 'a';
                }
                return;
            }
            out_ += ']';
            memoize(p.get());
            for (size_t b = 0; b < p->items.size(); b += 1000) {  // Python batches by 1000
                size_t e = std::min(p->items.size(), b + 1000);
                if (e - b == 1) {
                    save(p->items[b]);
                    out_ += 'a';
                    continue;
                }
                out_ += '(';
                for (size_t k = b; k < e; ++k) save(p->items[k]);
                out_ += 'e';
            }
            return;
        }
        case Py::Dict: {
            if (fromMemo(p.get())) return;
            if (proto_ == 0) {
                out_ += "(d";
                memoize(p.get());
                for (const auto& [k, v] : p->kv) {
                    save(k);
                    save(v);
                    out_ += 's';
                }
                return;
            }
            out_ += '}';
            memoize(p.get());
            for (size_t b = 0; b < p->kv.size(); b += 1000) {
                size_t e = std::min(p->kv.size(), b + 1000);
                if (e - b == 1) {
                    save(p->kv[b].first);
                    save(p->kv[b].second);
                    out_ += 's';
                    continue;
                }
                out_ += '(';
                for (size_t k = b; k < e; ++k) {
                    save(p->kv[k].first);
                    save(p->kv[k].second);
                }
                out_ += 'u';
            }
            return;
        }
        }
    }

    int proto_;
    std::string out_;
    std::map<const Py*, uint32_t> memo_;
};

inline std::string dumps(const P& v, int protocol = 4) { return Writer(protocol).dumps(v); }

} // namespace testpickle
