//go:build !linux

package kafka

import (
	"io"
	"syscall"
)

// sendFile is sendfile(2) on Linux; elsewhere the bytes are copied.
func sendFile(syscall.Conn, uintptr, int64, int) (bool, error) { return false, nil }

// copyFile is pread(2) chunks on Linux; elsewhere AppendTo copies.
func copyFile(io.Writer, uintptr, int64, int, []byte) (bool, error) { return false, nil }
