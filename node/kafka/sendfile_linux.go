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

// copyFile writes n bytes of file fd from pos to w (a TLS connection,
// where sendfile cannot encrypt) through buf, one pread(2) of len(buf)
// at a time: the bytes are copied once into buf and once by TLS's
// encryption, never through the connection's bufio.Writer, and a large
// fetch needs no buffer of its size. It reports false when fd cannot be
// read so (the caller copies another way).
func copyFile(w io.Writer, fd uintptr, pos int64, n int, buf []byte) (handled bool, err error) {
	for n > 0 {
		chunk := buf[:min(n, len(buf))]
		got, err := syscall.Pread(int(fd), chunk, pos)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || got == 0 {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return handled, err
		}
		handled = true
		if _, err := w.Write(chunk[:got]); err != nil {
			return true, err
		}
		pos += int64(got)
		n -= got
	}
	return true, nil
}
