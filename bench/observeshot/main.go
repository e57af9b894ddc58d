// Command observeshot takes docs/observability.png: the panels of the
// Grafana dashboard docs/grafana/zerolock.json, drawn from a real
// Prometheus (Debian's prometheus) that scraped example/api's DevServer
// /metrics every second while a load drove contention, waits, timeouts,
// lost locks, replays and mismatches, screenshotted by headless Chromium
// (Debian's chromium). Everything it starts (redis-server, the service,
// Prometheus, Chromium) listens on loopback ports only, and is stopped when
// it ends, or killed with it.
//
//	make observability   # or: scripts/observability-shot.sh
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testproc"
)

func main() {
	repo := flag.String("repo", "..", "the repository root")
	out := flag.String("out", "../docs/observability.png", "the PNG to write")
	load := flag.Duration("load", 60*time.Second, "how long to drive the load")
	keep := flag.Bool("keep", false, "keep the temporary directory (logs, the service's /metrics after the load, the HTML page) and print its path")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *repo, *out, *load, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "observeshot:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, repo, out string, load time.Duration, keep bool) error {
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	out, err = filepath.Abs(out)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "zerolock-observability-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintln(os.Stderr, "kept", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	for _, tool := range []string{"prometheus", "chromium", "redis-server"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install %s, or make observability as root): %w", tool, tool, err)
		}
	}

	step("build example/api")
	api := filepath.Join(dir, "api")
	build := exec.CommandContext(ctx, "go", "build", "-o", api, "./example/api")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build example/api: %w", err)
	}

	step("start redis-server")
	redisDir := filepath.Join(dir, "redis")
	if err := os.Mkdir(redisDir, 0o755); err != nil {
		return err
	}
	rs, err := redistest.Launch(redisDir)
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	defer rs.Kill()

	step("start example/api")
	svc, err := startAPI(ctx, repo, dir, api, rs.Addr())
	if err != nil {
		return err
	}
	defer svc.proc.Kill()

	step("start prometheus")
	prom, err := startPrometheus(ctx, dir, svc.metricsAddr)
	if err != nil {
		return err
	}
	defer prom.proc.Kill()
	if err := prom.waitUp(ctx); err != nil {
		return err
	}

	step(fmt.Sprintf("drive the load for %v", load))
	start := time.Now()
	stats, err := drive(ctx, svc.base, rs.Addr(), load, rs.Pause, rs.Resume)
	if err != nil {
		return err
	}
	end := start.Add(load) // then the requests under way were answered
	fmt.Fprintln(os.Stderr, stats)
	if keep {
		if err := saveMetrics(ctx, "http://"+svc.metricsAddr+"/metrics", filepath.Join(dir, "metrics.txt")); err != nil {
			return err
		}
	}
	// The last scrape after the load, so the graphs reach its end.
	if err := prom.waitScrapedAfter(ctx, end.Add(time.Second)); err != nil {
		return err
	}

	step("query prometheus and draw the panels")
	d, err := loadDashboard(filepath.Join(repo, "docs", "grafana", "zerolock.json"))
	if err != nil {
		return err
	}
	from, to := start.Add(-5*time.Second), end.Add(2*time.Second)
	panels, err := prom.queryPanels(ctx, d, from, to)
	if err != nil {
		return err
	}
	page := filepath.Join(dir, "dashboard.html")
	version, _ := prom.version(ctx)
	if err := os.WriteFile(page, []byte(renderPage(panels, pageInfo{
		prometheus: version, load: load, stats: stats, from: from, to: to, loadStart: start,
	})), 0o644); err != nil {
		return err
	}

	step("screenshot with chromium")
	return screenshot(ctx, dir, page, out)
}

func step(what string) { fmt.Fprintln(os.Stderr, "observeshot:", what) }

// service is the running example/api.
type service struct {
	proc        *testproc.Process
	base        string // http://127.0.0.1:port
	metricsAddr string // its DevServer, 127.0.0.1:port
}

var portLine = regexp.MustCompile(`(?m)^Port: \d+$`)

// startAPI runs example/api with etc/api.yaml on a free loopback port, its
// DevServer (metrics) on another, on redis at redisAddr, logging errors
// only.
func startAPI(ctx context.Context, repo, dir, bin, redisAddr string) (*service, error) {
	conf, err := os.ReadFile(filepath.Join(repo, "etc", "api.yaml"))
	if err != nil {
		return nil, err
	}
	port, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	text := string(conf)
	if !portLine.MatchString(text) || !strings.Contains(text, "\nLog:\n  Encoding: plain\n") || strings.Contains(text, "\nDevServer:") {
		return nil, errors.New("etc/api.yaml changed shape: update observeshot's startAPI")
	}
	text = portLine.ReplaceAllString(text, "Port: "+strconv.Itoa(port))
	text = strings.Replace(text, "\nLog:\n  Encoding: plain\n", "\nLog:\n  Encoding: plain\n  Level: error\n  Stat: false\n", 1)
	text += fmt.Sprintf("\nDevServer:\n  Enabled: true\n  Host: 127.0.0.1\n  Port: %d\n", metricsPort)
	confPath := filepath.Join(dir, "api.yaml")
	if err := os.WriteFile(confPath, []byte(text), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "api.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-f", confPath)
	cmd.Dir, cmd.Stdout, cmd.Stderr = repo, logFile, logFile
	cmd.Env = append(os.Environ(), "ZEROLOCK_REDIS_HOST="+redisAddr)
	proc, err := testproc.Start(cmd)
	if err != nil {
		return nil, err
	}
	s := &service{proc: proc, base: fmt.Sprintf("http://127.0.0.1:%d", port), metricsAddr: fmt.Sprintf("127.0.0.1:%d", metricsPort)}
	for _, url := range []string{s.base + "/stock/sku-1", "http://" + s.metricsAddr + "/metrics"} {
		if err := waitHTTP(ctx, proc, url); err != nil {
			proc.Kill()
			return nil, fmt.Errorf("example/api: %w\n%s", err, testproc.LogTail(logPath))
		}
	}
	return s, nil
}

// waitHTTP polls url until it answers 200, for up to 20 s or until proc
// exits.
func waitHTTP(ctx context.Context, proc *testproc.Process, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer in 20 s: %w", url, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-proc.Exited():
			return fmt.Errorf("exited before %s answered", url)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// screenshot renders page with headless Chromium into out.
func screenshot(ctx context.Context, dir, page, out string) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	// Into the temporary directory first: a failed run leaves the picture
	// in docs/ as it was.
	shot := filepath.Join(dir, "shot.png")
	cmd := exec.CommandContext(ctx, "chromium", "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--no-first-run", "--force-device-scale-factor=1",
		"--user-data-dir="+filepath.Join(dir, "chromium"),
		fmt.Sprintf("--window-size=%d,%d", pageWidth, pageHeight),
		"--screenshot="+shot, "file://"+page)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	output, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("chromium: %w\n%s", err, output)
	}
	// Chromium's helpers (zygote, crashpad) are in its process group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
		return fmt.Errorf("chromium wrote no screenshot to %s:\n%s", shot, output)
	}
	if err := copyFile(shot, out); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "observeshot: wrote", out)
	return nil
}

// saveMetrics writes the service's /metrics page to path, for -keep.
func saveMetrics(ctx context.Context, url, path string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// copyFile writes src's bytes to dst through a temporary file beside dst,
// renamed into place, so dst is never half written.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
