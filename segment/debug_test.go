package segment

import "fmt"

func (l *Log) debugString() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := fmt.Sprintf("start %d leo %d:", l.logStart, l.leo)
	for _, g := range l.segs {
		s += fmt.Sprintf(" [base %d size %d next %d sealed %v]", g.base, g.size, g.next, g.sealed)
	}
	return s
}
