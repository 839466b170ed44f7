package kafka

import (
	"errors"
	"io"
	"syscall"
)

// sendFile writes n bytes of the file fd from position pos to the socket sc
// with sendfile(2): the kernel copies them from the page cache, never
// through user memory. handled is false when sc has no descriptor to send
// to (nothing was written).
func sendFile(sc syscall.Conn, fd uintptr, pos int64, n int) (handled bool, err error) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, nil
	}
	var werr error
	err = rc.Write(func(s uintptr) bool {
		for n > 0 {
			m, e := syscall.Sendfile(int(s), int(fd), &pos, n)
			if m > 0 {
				n -= m
			}
			switch {
			case errors.Is(e, syscall.EAGAIN):
				return false // wait until the socket is writable
			case errors.Is(e, syscall.EINTR):
			case e != nil:
				werr = e
				return true
			case m == 0:
				werr = io.ErrUnexpectedEOF // the file ends early
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return true, err
}
