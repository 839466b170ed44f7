//go:build unix

package quorum

import "syscall"

// peekSocket reports whether the socket has nothing to read and is not
// closed by its peer: a non-blocking MSG_PEEK that finds no data
// (EAGAIN). Data, an end of file or an error say the connection is not
// to be reused.
func peekSocket(rc syscall.RawConn) bool {
	alive := false
	err := rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n <= 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true
	})
	return err == nil && alive
}
