package mq

// #include <stdlib.h>
// #include "shim.h"
import "C"

import "unsafe"

// KeyPartition is the partition Kafka's default partitioner picks for key among partitions:
// (murmur2(key) & 0x7fffffff) % partitions.
func KeyPartition(key []byte, partitions int) (int, error) {
	r := C.mqgo_key_partition(bytesPtr(key), C.size_t(len(key)), C.int32_t(clamp32(int64(partitions))))
	if err := check("key partition", r); err != nil {
		return -1, err
	}
	return int(r.partition), nil
}

// Murmur2 is Kafka's murmur2 hash of key (signed, as Kafka's Utils.murmur2 returns it).
func Murmur2(key []byte) int32 {
	return int32(C.mq_key_murmur2(unsafe.Pointer(bytesPtr(key)), C.size_t(len(key))))
}

// RoundRobin returns the partitions that member (0-based) of members owns under round-robin
// assignment of partitions: partition p goes to member p % members.
func RoundRobin(partitions, members, member int) ([]int, error) {
	var out *C.int32_t
	r := C.mqgo_round_robin(C.int32_t(clamp32(int64(partitions))), C.int32_t(clamp32(int64(members))),
		C.int32_t(clamp32(int64(member))), &out)
	if err := check("round robin", r); err != nil {
		return nil, err
	}
	return takeInts(out, r.count), nil
}

// takeInts copies and frees an int32 array the shim malloc'd.
func takeInts(p *C.int32_t, n C.size_t) []int {
	out := make([]int, int(n))
	for i, v := range unsafe.Slice(p, int(n)) {
		out[i] = int(v)
	}
	C.free(unsafe.Pointer(p))
	return out
}
