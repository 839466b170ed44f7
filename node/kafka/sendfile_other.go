//go:build !linux

package kafka

import "syscall"

// sendFile is sendfile(2) on Linux; elsewhere the bytes are copied.
func sendFile(syscall.Conn, uintptr, int64, int) (bool, error) { return false, nil }
