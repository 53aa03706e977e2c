//go:build !cgo

package mq

// The mq package is a cgo binding of a C++ library: it cannot be built with CGO_ENABLED=0.
// Building it so stops at the line below with the instruction in its name.
const _ = mq_requires_cgo__build_with_CGO_ENABLED_1_and_a_C_and_Cpp_compiler_in_PATH
