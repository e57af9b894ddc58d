package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// scrapeEvery is Prometheus's scrape interval; rateWindow stands for the
// dashboard's $__rate_interval (Grafana takes at least four scrapes).
const (
	scrapeEvery = time.Second
	rateWindow  = "10s"
)

// promServer is the running Prometheus.
type promServer struct {
	proc *testproc.Process
	base string // http://127.0.0.1:port
	log  string
}

// startPrometheus runs prometheus on a free loopback port, with storage in
// dir, scraping the service's /metrics at target every second.
func startPrometheus(ctx context.Context, dir, target string) (*promServer, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`global:
  scrape_interval: %v
  evaluation_interval: %v
scrape_configs:
  - job_name: zerolock-api
    metrics_path: /metrics
    static_configs:
      - targets: ['%s']
`, scrapeEvery, scrapeEvery, target)), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command("prometheus", "--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	proc, err := testproc.Start(cmd)
	if err != nil {
		return nil, err
	}
	p := &promServer{proc: proc, base: fmt.Sprintf("http://127.0.0.1:%d", port), log: logPath}
	if err := waitHTTP(ctx, proc, p.base+"/-/ready"); err != nil {
		proc.Kill()
		return nil, fmt.Errorf("prometheus: %w\n%s", err, testproc.LogTail(logPath))
	}
	return p, nil
}

// waitUp waits for the first successful scrape of the service.
func (p *promServer) waitUp(ctx context.Context) error {
	return p.poll(ctx, 20*time.Second, func() (bool, error) {
		v, err := p.instant(ctx, `up{job="zerolock-api"}`)
		return err == nil && v == 1, err
	})
}

// waitScrapedAfter waits for a scrape of the service later than t.
func (p *promServer) waitScrapedAfter(ctx context.Context, t time.Time) error {
	return p.poll(ctx, 20*time.Second, func() (bool, error) {
		v, err := p.instant(ctx, `timestamp(up{job="zerolock-api"})`)
		return err == nil && v >= float64(t.UnixMilli())/1000, err
	})
}

func (p *promServer) poll(ctx context.Context, limit time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus: waited %v (last error %v)\n%s", limit, err, testproc.LogTail(p.log))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.proc.Exited():
			return fmt.Errorf("prometheus exited\n%s", testproc.LogTail(p.log))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// apiResponse is the envelope of Prometheus's HTTP API.
type apiResponse struct {
	Status string          `json:"status"`
	Error  string          `json:"error"`
	Data   json.RawMessage `json:"data"`
}

func (p *promServer) get(ctx context.Context, path string, q url.Values, data any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, q.Get("query"), r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

// instant is the value of a query that returns one sample now.
func (p *promServer) instant(ctx context.Context, query string) (float64, error) {
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {query}}, &data); err != nil {
		return 0, err
	}
	if len(data.Result) != 1 {
		return 0, fmt.Errorf("%s: %d samples", query, len(data.Result))
	}
	s, _ := data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// version is Prometheus's version, from its build information.
func (p *promServer) version(ctx context.Context) (string, error) {
	var data struct {
		Version string `json:"version"`
	}
	if err := p.get(ctx, "/api/v1/status/buildinfo", url.Values{}, &data); err != nil {
		return "", err
	}
	return data.Version, nil
}

// series is one line of a panel.
type series struct {
	legend string
	times  []float64 // unix seconds
	values []float64 // NaN where there is no value
}

// panelData is a dashboard panel with its lines.
type panelData struct {
	panel
	series []series
	hidden int // lines left out, the lowest
}

// maxLines is the most lines a panel draws (the highest), so its legend
// fits the picture.
const maxLines = 6

// peak is a series' highest value.
func peak(s series) float64 {
	m := 0.0
	for _, v := range s.values {
		if !math.IsNaN(v) {
			m = math.Max(m, v)
		}
	}
	return m
}

// queryPanels runs every panel's queries over [from, to], one point a
// scrape, with the dashboard's variables set to "every lock" and the rate
// window rateWindow. Lines that stay at 0 are left out, and past maxLines
// the lowest.
func (p *promServer) queryPanels(ctx context.Context, d *dashboard, from, to time.Time) ([]panelData, error) {
	vars := strings.NewReplacer("$__rate_interval", rateWindow, "$name", ".*")
	var out []panelData
	for _, pn := range d.Panels {
		pd := panelData{panel: pn}
		for _, t := range pn.Targets {
			var data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Values [][2]any          `json:"values"`
				} `json:"result"`
			}
			q := url.Values{"query": {vars.Replace(t.Expr)},
				"start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix(), 10)},
				"step": {strconv.FormatFloat(scrapeEvery.Seconds(), 'f', -1, 64)}}
			if err := p.get(ctx, "/api/v1/query_range", q, &data); err != nil {
				return nil, fmt.Errorf("panel %q: %w", pn.Title, err)
			}
			for _, r := range data.Result {
				s := series{legend: legend(t.LegendFormat, r.Metric)}
				for _, v := range r.Values {
					ts, _ := v[0].(float64)
					str, _ := v[1].(string)
					f, err := strconv.ParseFloat(str, 64)
					if err != nil || math.IsInf(f, 0) {
						f = math.NaN()
					}
					s.times, s.values = append(s.times, ts), append(s.values, f)
				}
				if !flat(s.values) {
					pd.series = append(pd.series, s)
				}
			}
		}
		if len(pd.series) > maxLines {
			sort.SliceStable(pd.series, func(i, j int) bool { return peak(pd.series[i]) > peak(pd.series[j]) })
			pd.hidden = len(pd.series) - maxLines
			pd.series = pd.series[:maxLines]
		}
		sort.SliceStable(pd.series, func(i, j int) bool { return pd.series[i].legend < pd.series[j].legend })
		out = append(out, pd)
	}
	return out, nil
}

// flat reports whether a series is 0 or missing throughout: a label set
// bound when a lock was made, for an outcome or cause that never came.
func flat(values []float64) bool {
	for _, v := range values {
		if v != 0 && !math.IsNaN(v) {
			return false
		}
	}
	return true
}

var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// legend fills a Grafana legend format such as "{{name}} {{cause}}".
func legend(format string, labels map[string]string) string {
	return legendLabel.ReplaceAllStringFunc(format, func(m string) string {
		return labels[legendLabel.FindStringSubmatch(m)[1]]
	})
}

// dashboard is the part of docs/grafana/zerolock.json that is drawn.
type dashboard struct {
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

func loadDashboard(path string) (*dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}
