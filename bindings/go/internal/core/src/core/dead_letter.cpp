#include "core/dead_letter.h"

#include <charconv>
#include <cstring>

namespace mq {
namespace {

std::string_view number(char (&buf)[24], int64_t v) {
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return {buf, static_cast<size_t>(r.ptr - buf)};
}

}  // namespace

void DeadLetter::capture(const mq_message &view, const mq_dead_letter &origin) {
    origin_ = origin;
    char part[24], off[24], count[24];
    const std::string_view names[] = {MQ_HEADER_DEAD_LETTER_TOPIC, MQ_HEADER_DEAD_LETTER_GROUP,
                                      MQ_HEADER_DEAD_LETTER_PARTITION, MQ_HEADER_DEAD_LETTER_OFFSET,
                                      MQ_HEADER_DEAD_LETTER_DELIVERY_COUNT};
    const std::string_view values[] = {origin.topic, origin.group, number(part, origin.partition),
                                       number(off, origin.offset),
                                       number(count, origin.delivery_count)};
    constexpr size_t kOrigin = sizeof names / sizeof names[0];

    // Everything goes into one buffer, sized first so that pointers into it stay put.
    size_t total = view.key_len + view.payload_len;
    for (size_t i = 0; i < view.header_count; i++)
        total += view.headers[i].name_len + view.headers[i].value_len;
    for (size_t i = 0; i < kOrigin; i++) total += names[i].size() + values[i].size();
    bytes_.resize(total);
    char *p = bytes_.data();
    auto put = [&p](const void *src, size_t n) {
        char *at = p;
        if (n) std::memcpy(p, src, n);
        p += n;
        return at;
    };
    const char *key = put(view.key, view.key_len);
    const char *payload = put(view.payload, view.payload_len);
    headers_.clear();
    headers_.reserve(view.header_count + kOrigin);
    for (size_t i = 0; i < view.header_count; i++) {
        const mq_header &h = view.headers[i];
        const char *name = put(h.name, h.name_len);
        const char *value = put(h.value, h.value_len);
        headers_.push_back({name, h.name_len, value, h.value_len});
    }
    for (size_t i = 0; i < kOrigin; i++) {
        const char *name = put(names[i].data(), names[i].size());
        const char *value = put(values[i].data(), values[i].size());
        headers_.push_back({name, names[i].size(), value, values[i].size()});
    }
    record_ =
        mq_record{view.key ? key : nullptr, view.key_len,    payload, view.payload_len,
                  headers_.data(),          headers_.size(), 0};  // a dead letter is due at once
}

}  // namespace mq
