#include "wire.h"

#include <cstring>
#include <string>

#include "errors.h"

namespace mqj {
namespace {

constexpr size_t kFixed = 4 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 4;

void put32(char *&p, int32_t v) {
    std::memcpy(p, &v, 4);
    p += 4;
}
void put64(char *&p, int64_t v) {
    std::memcpy(p, &v, 8);
    p += 8;
}
void put_bytes(char *&p, const void *b, size_t n) {
    if (n) std::memcpy(p, b, n);
    p += n;
}
void put_blob(char *&p, const void *b, size_t n) {
    put32(p, static_cast<int32_t>(n));
    put_bytes(p, b, n);
}

// Reads the encodings Java wrote; any inconsistency is refused, never read past.
class Reader {
public:
    Reader(const char *p, size_t n) : p_(p), end_(p + n) {}
    int32_t i32() {
        need(4);
        int32_t v;
        std::memcpy(&v, p_, 4);
        p_ += 4;
        return v;
    }
    const char *bytes(int32_t n) {
        if (n < 0) bad();
        need(static_cast<size_t>(n));
        const char *b = p_;
        p_ += n;
        return b;
    }
    bool done() const { return p_ == end_; }

private:
    void need(size_t n) {
        if (static_cast<size_t>(end_ - p_) < n) bad();
    }
    [[noreturn]] static void bad() {
        fail(MQ_ERR_INTERNAL, "the Java side sent a malformed encoding (a bug of the binding)");
    }
    const char *p_;
    const char *end_;
};

void read_headers(Reader &r, int32_t count, std::vector<mq_header> &out) {
    if (count < 0) fail(MQ_ERR_INTERNAL, "negative header count from the Java side");
    for (int32_t i = 0; i < count; ++i) {
        mq_header h;
        int32_t n = r.i32();
        h.name = r.bytes(n);
        h.name_len = static_cast<size_t>(n);
        n = r.i32();
        h.value = r.bytes(n);
        h.value_len = static_cast<size_t>(n);
        out.push_back(h);
    }
}

}  // namespace

bool Arena::reserve(size_t n) {
    if (n <= cap_) return false;
    size_t cap = cap_ ? cap_ : 4096;
    while (cap < n) cap *= 2;
    data_.reset(new char[cap]);
    cap_ = cap;
    return true;
}

size_t encoded_size(const mq_message *msgs, size_t n) {
    size_t total = 4;
    for (size_t i = 0; i < n; ++i) {
        const mq_message &m = msgs[i];
        total += kFixed + m.key_len + m.payload_len;
        for (size_t h = 0; h < m.header_count; ++h) {
            total += 8 + m.headers[h].name_len + m.headers[h].value_len;
        }
        if (m.dead_letter) {
            total += 4 + std::strlen(m.dead_letter->topic) + 4 + std::strlen(m.dead_letter->group) +
                     4 + 4 + 8;
        }
    }
    return total;
}

size_t encode(char *out, const mq_message *msgs, size_t n) {
    char *p = out;
    put32(p, static_cast<int32_t>(n));
    for (size_t i = 0; i < n; ++i) {
        const mq_message &m = msgs[i];
        put32(p, m.partition);
        put32(p, static_cast<int32_t>(m.delivery_count));
        put64(p, m.offset);
        put64(p, m.timestamp_ns);
        put64(p, m.lost);
        put32(p, m.key ? static_cast<int32_t>(m.key_len) : -1);
        put32(p, static_cast<int32_t>(m.payload_len));
        put32(p, static_cast<int32_t>(m.header_count));
        put32(p, m.dead_letter ? 1 : 0);
        put_bytes(p, m.key, m.key ? m.key_len : 0);
        put_bytes(p, m.payload, m.payload_len);
        for (size_t h = 0; h < m.header_count; ++h) {
            put_blob(p, m.headers[h].name, m.headers[h].name_len);
            put_blob(p, m.headers[h].value, m.headers[h].value_len);
        }
        if (const mq_dead_letter *d = m.dead_letter) {
            put_blob(p, d->topic, std::strlen(d->topic));
            put_blob(p, d->group, std::strlen(d->group));
            put32(p, d->partition);
            put32(p, static_cast<int32_t>(d->delivery_count));
            put64(p, d->offset);
        }
    }
    return static_cast<size_t>(p - out);
}

std::vector<mq_header> decode_headers(const char *data, size_t len) {
    std::vector<mq_header> out;
    if (!data) return out;
    Reader r(data, len);
    const int32_t count = r.i32();
    out.reserve(static_cast<size_t>(count > 0 ? count : 0));
    read_headers(r, count, out);
    if (!r.done()) fail(MQ_ERR_INTERNAL, "trailing bytes after the headers from the Java side");
    return out;
}

void decode_batch(const char *data, size_t len, Batch &out) {
    out.records.clear();
    out.headers.clear();
    Reader r(data, len);
    const int32_t count = r.i32();
    if (count < 0) fail(MQ_ERR_INTERNAL, "negative record count from the Java side");
    out.records.resize(static_cast<size_t>(count));
    // Header pointers are patched in once `headers` stops growing.
    std::vector<std::pair<size_t, size_t>> spans(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) {
        mq_record &rec = out.records[static_cast<size_t>(i)];
        std::memset(&rec, 0, sizeof rec);
        const int32_t key_len = r.i32();
        const int32_t payload_len = r.i32();
        const int32_t header_count = r.i32();
        if (key_len >= 0) {
            rec.key = r.bytes(key_len);
            rec.key_len = static_cast<size_t>(key_len);
        }
        rec.payload = r.bytes(payload_len);
        rec.payload_len = static_cast<size_t>(payload_len);
        spans[static_cast<size_t>(i)] = {out.headers.size(), static_cast<size_t>(header_count)};
        read_headers(r, header_count, out.headers);
    }
    if (!r.done()) fail(MQ_ERR_INTERNAL, "trailing bytes after the records from the Java side");
    for (size_t i = 0; i < out.records.size(); ++i) {
        if (spans[i].second == 0) continue;
        out.records[i].headers = out.headers.data() + spans[i].first;
        out.records[i].header_count = spans[i].second;
    }
}

}  // namespace mqj
