// How messages travel to Java: encoded into a native arena that Java reads through a direct
// ByteBuffer, one crossing per poll or handler call. Java copies keys, values and headers into
// byte[] from there (org.mq.Wire reads this format; the two change together).
//
// All integers native-endian. A poll result is an int32 count followed by the messages; each:
//   int32 partition, int32 delivery_count, int64 offset, int64 timestamp_ns, int64 lost,
//   int32 key_len (-1: no key), int32 payload_len, int32 header_count, int32 has_dead_letter,
//   key bytes, payload bytes,
//   header_count x (int32 name_len, name bytes, int32 value_len, value bytes),
//   if has_dead_letter: int32 topic_len, topic, int32 group_len, group, int32 partition,
//                       int32 delivery_count, int64 offset.
//
// Headers going in (publish) are an int32 count then the same name/value pairs; batch records
// are an int32 count then, per record, int32 key_len (-1: no key), int32 payload_len,
// int32 header_count, key, payload, headers.
#pragma once

#include <jni.h>
#include <mq.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#ifndef SWIG
namespace mqj {

class Arena {
public:
    Arena() = default;
    Arena(const Arena &) = delete;
    Arena &operator=(const Arena &) = delete;

    // Makes room for n bytes; true if the storage moved (old views are then stale).
    bool reserve(size_t n);
    char *data() { return data_.get(); }
    size_t capacity() const { return cap_; }

private:
    std::unique_ptr<char[]> data_;
    size_t cap_ = 0;
};

// Bytes the encoding of msgs needs.
size_t encoded_size(const mq_message *msgs, size_t n);
// Encodes msgs at out (which has encoded_size bytes); returns the bytes written.
size_t encode(char *out, const mq_message *msgs, size_t n);

// Parsed headers of a publish: views into the caller's buffer.
// Throws Error(MQ_ERR_INVALID) on a malformed encoding (a bug of the Java side).
std::vector<mq_header> decode_headers(const char *data, size_t len);

// Parsed batch records: views into the caller's buffer (headers in `headers`).
struct Batch {
    std::vector<mq_record> records;
    std::vector<mq_header> headers;
};
void decode_batch(const char *data, size_t len, Batch &out);

}  // namespace mqj
#endif
