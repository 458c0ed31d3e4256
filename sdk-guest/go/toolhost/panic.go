package toolhost

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	_ "unsafe" // for go:linkname
)

// abort ends the call with a WebAssembly trap (`unreachable`). A Rust
// plugin's panic ends the same way, so the host reports a panic as kind
// `trap` in every language. (Builds pass -checklinkname=0.)
//
//go:linkname abort runtime.abort
func abort()

// maxPanicMessage bounds the panic message written to stderr; the host
// keeps the last few hundred bytes of it in the trap's error.
const maxPanicMessage = 400

// panicked reports a tool's panic as a Rust plugin's panic hook does, on
// one line of stderr, `panicked at FILE:LINE: MESSAGE`, and ends the call
// with a trap. The instance is not used again: a panic may have left the
// plugin's state half-way through something.
func panicked(p any) {
	message := fmt.Sprint(p)
	if len(message) > maxPanicMessage {
		message = message[:maxPanicMessage] + "..."
	}
	message = strings.ReplaceAll(message, "\n", " ")
	fmt.Fprintf(os.Stderr, "panicked at %s: %s\n", panicSite(), message)
	abort()
}

// panicSite is FILE:LINE of the code that panicked: the first frame below
// runtime.gopanic that is not the runtime's own (a runtime error such as a
// nil dereference passes through runtime.panicmem and the like).
func panicSite() string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(1, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	inPanic := false
	for {
		f, more := frames.Next()
		if inPanic && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		if f.Function == "runtime.gopanic" {
			inPanic = true
		}
		if !more {
			return "an unknown place"
		}
	}
}
