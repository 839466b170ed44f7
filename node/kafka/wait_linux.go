package kafka

import "syscall"

// waitReadable waits, holding no buffer, until sc has a byte to read, has
// reached its end or failed, or its read deadline passes (a timeout
// error). It peeks (MSG_PEEK) so that nothing is consumed.
func waitReadable(sc syscall.Conn) error {
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool {
		var b [1]byte
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch err {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // not yet: wait for the poller
			}
			return true // data, end of stream or an error: the read will see it
		}
	})
}
