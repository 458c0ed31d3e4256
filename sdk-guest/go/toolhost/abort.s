// This file lets panic.go declare `abort` without a body: the body is the
// Go runtime's own (go:linkname). See https://pkg.go.dev/cmd/compile.
