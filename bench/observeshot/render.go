package main

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// The page's layout: panels in columns, as the dashboard lays them out
// two by two, here three by three to fit one picture.
const (
	columns     = 3
	panelWidth  = 490
	panelHeight = 310
	plotHeight  = 180
	plotLeft    = 62 // room for the y labels
	gap         = 10
	headHeight  = 64
	footHeight  = 44
	pageWidth   = columns*panelWidth + (columns+1)*gap
)

var pageHeight = 0 // set by renderPage for the screenshot's window

// palette is Grafana's classic series colours.
var palette = []string{"#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0", "#508642", "#CCA300"}

// pageInfo is what the page says about how its data was made.
type pageInfo struct {
	prometheus string
	load       time.Duration
	stats      *loadStats
	from, to   time.Time // the graphs' time range
	loadStart  time.Time
}

// renderPage draws the panels as a static HTML page of inline SVG charts.
func renderPage(panels []panelData, info pageInfo) string {
	rows := (len(panels) + columns - 1) / columns
	pageHeight = headHeight + rows*(panelHeight+gap) + footHeight
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body{margin:0;background:#111217;color:#ccccdc;font:13px/1.35 "DejaVu Sans",Arial,sans-serif;width:%dpx;height:%dpx;overflow:hidden}
.head{height:%dpx;padding:0 %dpx;display:flex;flex-direction:column;justify-content:center}
.head h1{font-size:19px;margin:0 0 3px;color:#fff;font-weight:600}
.head div{color:#9fa7b3}
.grid{display:grid;grid-template-columns:repeat(%d,%dpx);gap:%dpx;padding:0 %dpx}
.panel{background:#181b1f;border:1px solid #2c3235;border-radius:3px;height:%dpx;box-sizing:border-box;padding:6px 8px;overflow:hidden}
.panel h2{font-size:13.5px;margin:0 0 4px;color:#e6e6ee;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:2px 12px;font-size:11.5px;margin-top:2px}
.legend span i{display:inline-block;width:14px;height:4px;margin-right:5px;vertical-align:middle;border-radius:2px}
.none{color:#6e7681;font-size:12px}
.foot{height:%dpx;padding:0 %dpx;display:flex;align-items:center;color:#8e959f;font-size:12px}
code{color:#ccccdc}
</style></head><body>
`, pageWidth, pageHeight, headHeight, gap+2, columns, panelWidth, gap, gap, panelHeight, footHeight, gap+2)
	fmt.Fprintf(&b, `<div class="head"><h1>zerolock: locks</h1><div>The panels of <code>docs/grafana/zerolock.json</code>, from a real Prometheus %s scraping <code>example/api</code>'s DevServer <code>/metrics</code> every second under %.0f s of load (<code>make observability</code>)</div></div>
<div class="grid">
`, html.EscapeString(info.prometheus), info.load.Seconds())
	for _, p := range panels {
		b.WriteString(renderPanel(p, info))
	}
	fmt.Fprintf(&b, `</div><div class="foot">All locks ($name = .*), $__rate_interval = %s. Load: double-clicked orders, three exports at once per user, payments retried (and some with another amount), one coupon again and again, queued report rebuilds, a report lock deleted under its holder every 5 s, and Redis stalled for %.0f s at %.0f s.</div>
</body></html>
`, rateWindow, stallFor.Seconds(), (info.load * 6 / 10).Seconds())
	return b.String()
}

func renderPanel(p panelData, info pageInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<div class="panel"><h2>%s</h2>`, html.EscapeString(p.Title))
	plotWidth := panelWidth - 16 - plotLeft - 8
	x0, x1 := float64(info.from.Unix()), float64(info.to.Unix())
	ymax := 0.0
	for _, s := range p.series {
		for _, v := range s.values {
			if !math.IsNaN(v) {
				ymax = math.Max(ymax, v)
			}
		}
	}
	step, top := niceScale(ymax)
	unit := p.FieldConfig.Defaults.Unit
	fmt.Fprintf(&b, `<svg width="%d" height="%d" font-size="11" fill="#9fa7b3">`, panelWidth-16, plotHeight+20)
	for v := 0.0; v <= top*1.0001; v += step {
		y := float64(plotHeight) - v/top*float64(plotHeight-6)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#2c3235"/>`, plotLeft, plotLeft+plotWidth, y, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, plotLeft-6, y+4, html.EscapeString(formatValue(v, unit)))
	}
	start := float64(info.loadStart.Unix())
	for t := start; t <= x1; t += 15 {
		x := float64(plotLeft) + (t-x0)/(x1-x0)*float64(plotWidth)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="0" y2="%d" stroke="#22262a"/>`, x, x, plotHeight)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0fs</text>`, x, plotHeight+15, t-start)
	}
	for i, s := range p.series {
		color := palette[i%len(palette)]
		var path strings.Builder
		pen := false
		for k, v := range s.values {
			if math.IsNaN(v) {
				pen = false
				continue
			}
			x := float64(plotLeft) + (s.times[k]-x0)/(x1-x0)*float64(plotWidth)
			y := float64(plotHeight) - v/top*float64(plotHeight-6)
			if pen {
				fmt.Fprintf(&path, "L%.1f %.1f", x, y)
			} else {
				fmt.Fprintf(&path, "M%.1f %.1f", x, y)
				pen = true
			}
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.6" stroke-linejoin="round"/>`, path.String(), color)
	}
	b.WriteString(`</svg>`)
	b.WriteString(`<div class="legend">`)
	if len(p.series) == 0 {
		b.WriteString(`<span class="none">no data: nothing of this kind happened</span>`)
	}
	for i, s := range p.series {
		fmt.Fprintf(&b, `<span><i style="background:%s"></i>%s</span>`, palette[i%len(palette)], html.EscapeString(s.legend))
	}
	if p.hidden > 0 {
		fmt.Fprintf(&b, `<span class="none">and %d lower lines</span>`, p.hidden)
	}
	b.WriteString(`</div></div>
`)
	return b.String()
}

// niceScale is a tick step and the axis top (a multiple of it, at least
// max) for values up to max: 4 or 5 ticks of 1, 2 or 5 times a power of
// ten.
func niceScale(max float64) (step, top float64) {
	if max <= 0 || math.IsNaN(max) {
		return 0.25, 1
	}
	raw := max / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return step, math.Ceil(max/step-1e-9) * step
}

// formatValue writes v in a panel's Grafana unit.
func formatValue(v float64, unit string) string {
	switch unit {
	case "s":
		if v == 0 {
			return "0"
		}
		if v < 1 {
			return trim(v*1000) + " ms"
		}
		return trim(v) + " s"
	case "percentunit":
		return trim(v*100) + "%"
	case "ops":
		return trim(v) + "/s"
	case "reqps":
		return trim(v) + " req/s"
	}
	return trim(v)
}

func trim(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
