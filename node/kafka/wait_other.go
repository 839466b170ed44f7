//go:build !linux

package kafka

import (
	"errors"
	"syscall"
)

// waitReadable is Linux only here; elsewhere a connection keeps its read
// buffer while idle.
func waitReadable(syscall.Conn) error { return errors.ErrUnsupported }
