// Command lbd-config-server serves SQL proxy lists to lbd and lb-driver clients. It speaks the
// protocol of lb-driver's Java config-server, so Java and Go services can share it; documents
// come from etcd or from a file. Run it with -h for its flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lbd-go/lbd/configserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process at once
	}()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	stop()
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ue):
		os.Exit(2) // the flag package has printed the problem and the usage
	default:
		fmt.Fprintln(os.Stderr, "lbd-config-server:", err)
		os.Exit(1)
	}
}

// run runs the server until ctx is done, then shuts it down gracefully. Logs and usage go to
// stderr. ready, when not nil, is called with the listening address once requests are served.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(net.Addr)) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	log, err := cfg.logger(stderr)
	if err != nil {
		return err
	}
	backend, err := cfg.backend(log)
	if err != nil {
		return err
	}
	attrs := []any{"listen", cfg.Listen, "backend", cfg.Backend}
	if cfg.Backend == "etcd" { // the password itself is never logged
		attrs = append(attrs, "etcdEndpoints", cfg.Etcd.Endpoints.String(), "etcdPrefix", cfg.Etcd.Prefix,
			"etcdUser", cfg.Etcd.User, "etcdTLS", cfg.Etcd.CAFile != "" || cfg.Etcd.CertFile != "" || cfg.Etcd.ServerName != "")
	} else {
		attrs = append(attrs, "file", cfg.File.Path, "pollInterval", cfg.File.PollInterval)
	}
	log.Info("lbd-config-server starting", attrs...)

	srv, err := configserver.New(ctx, configserver.Config{
		Backend:                  backend,
		Logger:                   log,
		AllowRemoteOnlineOffline: !cfg.OnlineOfflineLoopbackOnly,
		HideUnknownSchemas:       cfg.HideUnknownSchemas,
		ProbeInterval:            offIfNotPositive(cfg.Probe.Interval),
		ProbeTimeout:             cfg.Probe.Timeout,
		ProbeConcurrency:         cfg.Probe.Concurrency,
		DrainWindow:              cfg.DrainWindow,
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("lbd-config-server serving", "addr", ln.Addr().String(), "schemas", len(srv.Schemas()))
	if ready != nil {
		ready(ln.Addr())
	}

	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	log.Info("lbd-config-server stopping", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("lbd-config-server: requests cut at shutdown", "err", err)
		hs.Close()
	}
	<-served
	if err := srv.Close(); err != nil {
		log.Warn("lbd-config-server: closing the backend", "err", err)
	}
	log.Info("lbd-config-server stopped")
	return nil
}

// offIfNotPositive maps the flag's "0 or negative: off" to the package's negative value (for
// which zero means its default).
func offIfNotPositive(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
