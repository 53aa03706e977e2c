package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import "unsafe"

// KeyPartition is the partition Kafka's default partitioner picks for key among partitions:
// (murmur2(key) & 0x7fffffff) % partitions.
func KeyPartition(key []byte, partitions int) (int, error) {
	var p C.int32_t
	if err := direct("key partition", func() C.mq_status {
		return C.mq_key_partition(unsafe.Pointer(bytesPtr(key)), C.size_t(len(key)), C.int32_t(clamp32(int64(partitions))), &p)
	}); err != nil {
		return -1, err
	}
	return int(p), nil
}

// Murmur2 is Kafka's murmur2 hash of key (signed, as Kafka's Utils.murmur2 returns it).
func Murmur2(key []byte) int32 {
	return int32(C.mq_key_murmur2(unsafe.Pointer(bytesPtr(key)), C.size_t(len(key))))
}

// RoundRobin returns the partitions that member (0-based) of members owns under round-robin
// assignment of partitions: partition p goes to member p % members.
func RoundRobin(partitions, members, member int) ([]int, error) {
	return ints("round robin", func(out *C.int32_t, cap C.size_t, count *C.size_t) C.mq_status {
		return C.mq_assignment_round_robin(C.int32_t(clamp32(int64(partitions))), C.int32_t(clamp32(int64(members))),
			C.int32_t(clamp32(int64(member))), out, cap, count)
	})
}

// ints makes a call that fills a partition list and says how many there are (which may be
// more than fit: then it is asked again with room for them all).
func ints(op string, f func(out *C.int32_t, cap C.size_t, count *C.size_t) C.mq_status) ([]int, error) {
	buf := make([]C.int32_t, 16)
	for {
		var n C.size_t
		if err := direct(op, func() C.mq_status { return f(&buf[0], C.size_t(len(buf)), &n) }); err != nil {
			return nil, err
		}
		if int(n) <= len(buf) {
			out := make([]int, int(n))
			for i := range out {
				out[i] = int(buf[i])
			}
			return out, nil
		}
		buf = make([]C.int32_t, int(n))
	}
}
