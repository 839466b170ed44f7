package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Durability modes of a cell: how the topic is configured.
const (
	DurPageCache = "page-cache" // the default: flush never, replication is the durability
	DurSync      = "sync"       // sluice.durability=sync: fsync before ack (group commit)
	DurFlush1    = "flush1"     // flush.messages=1: an fsync per append, for contrast
)

// Batching modes of a cell's producer.
const (
	BatchDefault = "default" // kgo's defaults: 10 ms linger, 1 MB batches
	BatchLinger  = "linger"  // Options.Linger (default 0: send at once)
)

// Cell is one point of the matrix: one topic, one producer setting, run for
// a bounded time.
type Cell struct {
	Acks       string  `json:"acks"`       // "0", "1" or "all"
	Durability string  `json:"durability"` // DurPageCache, DurSync, DurFlush1
	Size       int     `json:"record_size"`
	RF         int     `json:"replication_factor"`
	Partitions int     `json:"partitions"`
	Batching   string  `json:"batching"` // BatchDefault or BatchLinger
	RateMBps   float64 `json:"offered_mb_per_sec,omitempty"`
}

// Name is the cell as people read it, e.g. "rf3 acks=all page-cache 1KiB p6 default".
func (c Cell) Name() string {
	s := fmt.Sprintf("rf%d acks=%s %s %s p%d %s", c.RF, c.Acks, c.Durability, sizeName(c.Size), c.Partitions, c.Batching)
	if c.RateMBps > 0 {
		s += fmt.Sprintf(" @%gMB/s", c.RateMBps)
	}
	return s
}

func sizeName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// TopicConfigs are the topic configs that give the cell its durability.
// Page-cache is the default and sets nothing, so it works on any broker.
func (c Cell) TopicConfigs() map[string]*string {
	v := func(s string) *string { return &s }
	switch c.Durability {
	case DurSync:
		return map[string]*string{"sluice.durability": v("sync")}
	case DurFlush1:
		return map[string]*string{"flush.messages": v("1")}
	}
	return nil
}

// Dimensions are the values of each axis of the matrix.
type Dimensions struct {
	Acks       []string
	Durability []string
	Sizes      []int
	RF         []int
	Partitions []int
	Batching   []string
}

// FullDimensions is the whole matrix of issue 8: 144 cells.
func FullDimensions() Dimensions {
	return Dimensions{
		Acks:       []string{"0", "1", "all"},
		Durability: []string{DurPageCache, DurSync, DurFlush1},
		Sizes:      []int{100, 1024},
		RF:         []int{1, 3},
		Partitions: []int{1, 6},
		Batching:   []string{BatchDefault, BatchLinger},
	}
}

// Cells is the cross product, ordered so that cells sharing a topic shape
// are adjacent (RF, partitions, durability outermost).
func (d Dimensions) Cells() []Cell {
	var out []Cell
	for _, rf := range d.RF {
		for _, p := range d.Partitions {
			for _, dur := range d.Durability {
				for _, size := range d.Sizes {
					for _, acks := range d.Acks {
						for _, b := range d.Batching {
							out = append(out, Cell{Acks: acks, Durability: dur, Size: size, RF: rf, Partitions: p, Batching: b})
						}
					}
				}
			}
		}
	}
	return out
}

// QuickCells are the key cells for a short run: the targets (RF=3,
// acks=all, 6 partitions: page-cache at both sizes, sync and flush.messages=1
// at 1 KiB) and the same at RF=1, which works before replication is wired.
func QuickCells() []Cell {
	var out []Cell
	for _, rf := range []int{1, 3} {
		for _, c := range []struct {
			dur  string
			size int
		}{{DurPageCache, 100}, {DurPageCache, 1024}, {DurSync, 1024}, {DurFlush1, 1024}} {
			out = append(out, Cell{Acks: "all", Durability: c.dur, Size: c.size, RF: rf, Partitions: 6, Batching: BatchDefault})
		}
	}
	return out
}

// RateCells are the fixed-load cells: page-cache, acks=all, 1 KiB, 6
// partitions at the offered rate, for each RF in rfs.
func RateCells(rate float64, rfs []int) []Cell {
	var out []Cell
	for _, rf := range rfs {
		out = append(out, Cell{Acks: "all", Durability: DurPageCache, Size: 1024, RF: rf, Partitions: 6, Batching: BatchDefault, RateMBps: rate})
	}
	return out
}

// Filter keeps the cells whose every axis is in d (an empty axis keeps all).
func (d Dimensions) Filter(cells []Cell) []Cell {
	var out []Cell
	for _, c := range cells {
		if (len(d.Acks) == 0 || slices.Contains(d.Acks, c.Acks)) &&
			(len(d.Durability) == 0 || slices.Contains(d.Durability, c.Durability)) &&
			(len(d.Sizes) == 0 || slices.Contains(d.Sizes, c.Size)) &&
			(len(d.RF) == 0 || slices.Contains(d.RF, c.RF)) &&
			(len(d.Partitions) == 0 || slices.Contains(d.Partitions, c.Partitions)) &&
			(len(d.Batching) == 0 || slices.Contains(d.Batching, c.Batching)) {
			out = append(out, c)
		}
	}
	return out
}

// parseAxis checks a flag's values against the allowed ones.
func parseAxis(flag string, vals, allowed []string) ([]string, error) {
	for _, v := range vals {
		if !slices.Contains(allowed, v) {
			return nil, fmt.Errorf("--%s %s: want one of %s", flag, v, strings.Join(allowed, ","))
		}
	}
	return vals, nil
}

// parseInts reads a comma list of positive integers; sizes may end in KiB or k.
func parseInts(flag string, vals []string) ([]int, error) {
	var out []int
	for _, v := range vals {
		mult := 1
		s := strings.TrimSpace(v)
		for _, suf := range []string{"KiB", "k", "K"} {
			if strings.HasSuffix(s, suf) {
				s, mult = strings.TrimSuffix(s, suf), 1024
				break
			}
		}
		s = strings.TrimSuffix(s, "B")
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--%s %q: want positive integers, e.g. 100,1KiB", flag, v)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

// estimate is how long cells take at d per cell plus setup.
func estimate(n int, d time.Duration) time.Duration {
	return time.Duration(n) * (d + 4*time.Second)
}
