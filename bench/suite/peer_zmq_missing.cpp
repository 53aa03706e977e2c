// Built instead of peer_zmq.cpp when libzmq is not installed: the suite runs without that peer.
#include "benches.h"

namespace suite {
bool have_zmq() { return false; }
double bench_zmq(uint64_t, int) { return 0; }
}  // namespace suite
