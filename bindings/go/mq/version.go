package mq

// #include "shim.h"
import "C"

import "fmt"

// HeaderVersion is the version of mq.h the package was compiled against (major*1000000 +
// minor*1000 + patch).
const HeaderVersion = int(C.MQ_VERSION_NUMBER)

// versionErr is set at init when the library linked at run time cannot serve the header the
// package was compiled with (an installed libmq older than, or of another major than, its
// mq.h). Every constructor returns it instead of calling into a library that may misbehave.
var versionErr = compatible(HeaderVersion, int(C.mq_version_number()))

// compatible is pebbe/zmq4's rule for header/library skew: same major, runtime minor at
// least the compiled one.
func compatible(compiled, runtime int) error {
	if compiled/1000000 == runtime/1000000 && runtime/1000%1000 >= compiled/1000%1000 {
		return nil
	}
	return &Error{Op: "version check", Status: StatusInvalid, Message: fmt.Sprintf(
		"the mq library at run time is %s but this package was compiled against mq.h %s; "+
			"install a libmq of major %d and minor at least %d",
		versionText(runtime), versionText(compiled), compiled/1000000, compiled/1000%1000)}
}

func versionText(v int) string {
	return fmt.Sprintf("%d.%d.%d", v/1000000, v/1000%1000, v%1000)
}

// Version is the library's version at run time, e.g. "1.0.0".
func Version() string { return C.GoString(C.mq_version_string()) }

// VersionNumber is the library's version at run time as major*1000000 + minor*1000 + patch.
func VersionNumber() int { return int(C.mq_version_number()) }

// CheckVersion reports whether the library linked at run time is compatible with the header
// the package was compiled against (nil if so). NewBroker returns the same error.
func CheckVersion() error { return versionErr }
