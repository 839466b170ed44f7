package bench

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one group of points in the picture.
type series struct {
	label string
	pts   plotter.XYs
}

// plotGroups groups the measured cells by system and durability, the axes
// the picture is about; every other axis is a point within the group.
func plotGroups(rep *Report) []series {
	var out []series
	idx := map[string]int{}
	add := func(label string, r Result) {
		if !r.OK() || r.Cell.RateMBps > 0 {
			return
		}
		i, ok := idx[label]
		if !ok {
			i = len(out)
			idx[label] = i
			out = append(out, series{label: label})
		}
		out[i].pts = append(out[i].pts, plotter.XY{X: r.MBPerSec, Y: math.Max(r.Produce.P99, 0.01)})
	}
	for _, r := range rep.Sluice {
		add(fmt.Sprintf("sluice rf%d %s", r.Cell.RF, r.Cell.Durability), r)
	}
	for _, r := range rep.Peer {
		add(fmt.Sprintf("%s R%d %s", rep.PeerName, r.Cell.RF, r.Cell.Durability), r)
	}
	return out
}

// palette has ten distinct colours (the series of a full run with a peer
// number ten at most: 2 RF × 3 durabilities + 2 RF × 2 sync settings).
var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, {R: 0xff, G: 0x7f, B: 0x0e, A: 255}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 255},
	{R: 0xd6, G: 0x27, B: 0x28, A: 255}, {R: 0x94, G: 0x67, B: 0xbd, A: 255}, {R: 0x8c, G: 0x56, B: 0x4b, A: 255},
	{R: 0xe3, G: 0x77, B: 0xc2, A: 255}, {R: 0x7f, G: 0x7f, B: 0x7f, A: 255}, {R: 0xbc, G: 0xbd, B: 0x22, A: 255},
	{R: 0x17, G: 0xbe, B: 0xcf, A: 255},
}

// WritePlot draws p99 produce latency (log scale) against throughput, one
// colour per series, filled circles for Sluice and crosses for the peer, to
// a PNG file.
func WritePlot(path string, rep *Report) error {
	groups := plotGroups(rep)
	if len(groups) == 0 {
		return fmt.Errorf("no cell measured anything to plot")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Throughput vs p99 produce latency, unpaced cells (%d nodes, %gs per cell)", rep.Nodes, rep.CellSeconds)
	p.X.Label.Text = "throughput (MB/s of record values)"
	p.Y.Label.Text = "p99 produce latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = ticks125{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	for i, g := range groups {
		s, err := plotter.NewScatter(g.pts)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = palette[i%len(palette)]
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		if !strings.HasPrefix(g.label, "sluice ") {
			s.GlyphStyle.Shape = draw.CrossGlyph{}
		}
		s.GlyphStyle.Radius = vg.Points(4)
		p.Add(s)
		p.Legend.Add(g.label, s)
	}
	// Room around the points, so that none sits on an axis or under the legend.
	p.X.Min = 0
	p.X.Max *= 1.15
	p.Y.Min /= 1.5
	p.Y.Max *= 3
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// ticks125 marks 1, 2, 5 of every decade in the range: plot.LogTicks marks
// only powers of ten, too few for latencies spanning one or two decades.
type ticks125 struct{}

func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for dec := math.Pow(10, math.Floor(math.Log10(lo))); dec <= hi; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := dec * m
			if v >= lo && v <= hi {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return out
}
