package ab

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// errPoints are one config's points: percent improvement per case, with
// the config's CV as the error bar.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// WritePNG draws the table: per case, each config's percent improvement
// over the baseline (the first config), the CV as error bars, and a zero
// line. Cases are evenly spaced, labelled as the table labels them.
func (t *Table) WritePNG(w io.Writer) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("proxysim ab: %s %s (%s), %d CPUs, %d seeds", t.Spec.Bench, t.Metric.Name, t.Stat, t.Spec.CPUs, t.Spec.Seeds)
	p.X.Label.Text = t.Spec.Primary
	p.Y.Label.Text = fmt.Sprintf("%% improvement over %s (error bars: CV)", t.Spec.Configs[0])
	var ticks []plot.Tick
	for i, r := range t.Rows {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprint(r.Case)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(t.Rows))-0.5
	zero := plotter.NewFunction(func(float64) float64 { return 0 })
	zero.Color = color.Gray{Y: 128}
	p.Add(zero, plotter.NewGrid())
	n := len(t.Spec.Configs)
	for ci := 0; ci < n; ci++ {
		var pts errPoints
		for i, r := range t.Rows {
			c := r.Cells[ci]
			if math.IsNaN(c.PctImp) || math.IsInf(c.PctImp, 0) {
				continue
			}
			x := float64(i) + 0.25*(float64(ci)-float64(n-1)/2)/float64(max(n-1, 1))
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: c.PctImp})
			// the CV is relative to the config's own mean; on the
			// percent scale that is CV% of the ratio
			e := c.CV * c.Ratio
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{e, e})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		col := plotutil.Color(ci)
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return err
		}
		line.Color, points.Color = col, col
		points.Shape = draw.CircleGlyph{}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return err
		}
		bars.Color = col
		p.Add(line, points, bars)
		p.Legend.Add(t.Spec.Configs[ci], line, points)
	}
	p.Legend.Top, p.Legend.Left = true, true
	wt, err := p.WriterTo(5.5*vg.Inch, 3.2*vg.Inch, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}
