package metrics

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultPort is the port of --metrics-addr when only a host is given.
const DefaultPort = 9464

// MetricsPath is where Serve exposes the registry.
const MetricsPath = "/metrics"

// NewRegistry returns a fresh registry (never the global one) holding c
// plus the Go runtime, process and build-info collectors.
func NewRegistry(c *Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		c,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
	)
	return reg
}

// Handler serves reg in the Prometheus text or OpenMetrics format, at
// most 4 scrapes at a time, each cut off after 10s. A collector error
// still serves what could be gathered. The handler's own request and
// error counters (promhttp_metric_handler_*) are registered in reg.
func Handler(reg *prometheus.Registry) http.Handler {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:            reg,
		Timeout:             10 * time.Second,
		MaxRequestsInFlight: 4,
		ErrorHandling:       promhttp.ContinueOnError,
		EnableOpenMetrics:   true,
	})
	return promhttp.InstrumentMetricHandler(reg, h)
}

const indexPage = `<!DOCTYPE html>
<html><head><title>proxysim metrics</title></head>
<body><h1>proxysim</h1><p><a href="%s">Metrics</a></p><p><a href="%s">Profiles</a> (net/http/pprof)</p></body></html>
`

// PprofPath is where Serve exposes the net/http/pprof handlers.
const PprofPath = "/debug/pprof/"

// pprofMux registers net/http/pprof's handlers on mux under PprofPath.
// The CPU profile and the execution trace run for ?seconds= (30 by
// default), longer than the server's WriteTimeout: they get a write
// deadline of their own and are told there is no server timeout.
func pprofMux(mux *http.ServeMux) {
	mux.HandleFunc(PprofPath, pprof.Index)
	mux.HandleFunc(PprofPath+"cmdline", pprof.Cmdline)
	mux.Handle(PprofPath+"profile", longRunning(http.HandlerFunc(pprof.Profile)))
	mux.HandleFunc(PprofPath+"symbol", pprof.Symbol)
	mux.Handle(PprofPath+"trace", longRunning(http.HandlerFunc(pprof.Trace)))
}

// longRunning lets a handler that streams for ?seconds= (at most 10
// minutes) outlive the server's WriteTimeout.
func longRunning(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sec, err := strconv.ParseFloat(r.FormValue("seconds"), 64)
		if err != nil || sec <= 0 {
			sec = 30
		}
		sec = min(sec, 600)
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(sec*float64(time.Second)) + 15*time.Second))
		ctx := context.WithValue(r.Context(), http.ServerContextKey, &http.Server{})
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Serve listens on addr (resolved with ResolveAddr, so ":9464" binds the
// loopback interface only) and serves /metrics, the net/http/pprof
// profiles under /debug/pprof/ and an index page linking to both, in the
// background. It returns the bound address (which tells the
// port chosen for port 0) and a shutdown function that stops the server
// gracefully, within ctx, and reports any error the server hit.
func Serve(addr string, reg *prometheus.Registry) (bound string, shutdown func(context.Context) error, err error) {
	addr, err = ResolveAddr(addr)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics: listen on %s: %v", addr, oneLine(err))
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, Handler(reg))
	pprofMux(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, indexPage, html.EscapeString(MetricsPath), html.EscapeString(PprofPath))
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second, // longer than the handler's 10s timeout
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var once sync.Once
	var serveErr error
	shutdown = func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		once.Do(func() {
			select {
			case e := <-served:
				if !errors.Is(e, http.ErrServerClosed) {
					serveErr = e
				}
			case <-ctx.Done():
			}
		})
		if err == nil {
			err = serveErr
		}
		return err
	}
	return ln.Addr().String(), shutdown, nil
}

// ResolveAddr turns a --metrics-addr value into a listen address:
//
//	""               error
//	"9464", ":9464"  "127.0.0.1:9464" (loopback unless a host is written)
//	"host"           "host:9464" (DefaultPort)
//	"host:port"      kept ("0.0.0.0:9464" listens on all interfaces)
//
// Errors are one line.
func ResolveAddr(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("metrics address is empty (want host:port, :port or port)")
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("metrics address %q: %s", s, why)
	}
	if isDigits(s) {
		if _, err := parsePort(s); err != nil {
			return bad(err.Error())
		}
		return net.JoinHostPort("127.0.0.1", s), nil
	}
	if strings.ContainsAny(s, "/?#@ \t\r\n") {
		return bad("want host:port, :port or port, not a URL")
	}
	// A bare IPv6 address, bracketed or not.
	if h := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"); strings.Contains(h, ":") && net.ParseIP(h) != nil {
		return net.JoinHostPort(h, strconv.Itoa(DefaultPort)), nil
	}
	if !strings.Contains(s, ":") {
		return net.JoinHostPort(s, strconv.Itoa(DefaultPort)), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return bad(ae.Err)
		}
		return bad(oneLine(err))
	}
	if _, err := parsePort(port); err != nil {
		return bad(err.Error())
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func parsePort(p string) (int, error) {
	if !isDigits(p) {
		return 0, fmt.Errorf("port %q is not a number", p)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("port %s out of range 0-65535", p)
	}
	return int(n), nil
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Bounds of ScrapeLoop.
const (
	scrapeTimeout  = 10 * time.Second
	scrapeMaxBytes = 64 << 20
)

// ScrapeLoop GETs url, one request at a time, every interval (back to back
// when every <= 0), until ctx ends. It returns the number of successful
// scrapes (status 200) and the body bytes they read. A failed scrape is
// not retried sooner than 10ms later. It only talks to
// loopback addresses (http://127.0.0.1:port/..., http://[::1]:port/...,
// http://localhost:port/...), never through a proxy; any other URL gives
// 0, 0. Each scrape is bounded (10s, 64 MiB). Meant for measuring the
// overhead of scraping a running simulation.
func ScrapeLoop(ctx context.Context, url string, every time.Duration) (scrapes int, bytes int64) {
	if !loopbackURL(url) {
		return 0, 0
	}
	dialer := &net.Dialer{Timeout: scrapeTimeout}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
			if err != nil {
				return nil, err
			}
			for _, ip := range ips {
				if !ip.IP.IsLoopback() {
					return nil, fmt.Errorf("metrics: %s is not a loopback address", host)
				}
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        1,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		Timeout:   scrapeTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	var tick *time.Ticker
	if every > 0 {
		tick = time.NewTicker(every)
		defer tick.Stop()
	}
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return scrapes, bytes
		}
		ok := false
		if resp, err := client.Do(req); err == nil {
			n, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, scrapeMaxBytes))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && rerr == nil {
				ok = true
				scrapes++
				bytes += n
			}
		}
		switch {
		case tick != nil:
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		case !ok: // back to back, but do not spin on a failing target
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return scrapes, bytes
}

func loopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.User != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
