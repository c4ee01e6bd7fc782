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
// stderr. ready, when not nil, is called with the listening addresses once requests are served;
// admin is nil without an admin listener.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(public, admin net.Addr)) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	log, err := cfg.logger(stderr)
	if err != nil {
		return err
	}
	token, err := cfg.adminToken()
	if err != nil {
		return err
	}
	if token != "" && cfg.AdminListen == "" {
		return errors.New("an admin token is given but -admin-listen is empty: give an admin address or drop the token")
	}
	backend, err := cfg.backend(log)
	if err != nil {
		return err
	}
	attrs := []any{"listen", cfg.Listen, "adminListen", cfg.AdminListen, "adminToken", token != "", "backend", cfg.Backend}
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
		AdminToken:               token,
		AllowRemoteOnlineOffline: !cfg.OnlineOfflineLoopbackOnly,
		HideUnknownSchemas:       cfg.HideUnknownSchemas,
		ProbeInterval:            offIfNotPositive(cfg.Probe.Interval),
		ProbeTimeout:             cfg.Probe.Timeout,
		ProbeConcurrency:         cfg.Probe.Concurrency,
		DrainWindow:              cfg.DrainWindow,
		ReloadInterval:           offIfNotPositive(cfg.ReloadInterval),
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	listeners, err := listen(cfg, token != "")
	if err != nil {
		return err
	}
	servers := []*http.Server{newHTTPServer(srv.Handler(), log)}
	if len(listeners) > 1 {
		servers = append(servers, newHTTPServer(srv.AdminHandler(), log))
	}
	served := make(chan error, len(servers))
	for i, hs := range servers {
		go func() { served <- hs.Serve(listeners[i]) }()
	}
	var adminAddr net.Addr
	if len(listeners) > 1 {
		adminAddr = listeners[1].Addr()
	}
	log.Info("lbd-config-server serving", "addr", listeners[0].Addr().String(), "adminAddr", addrString(adminAddr), "schemas", len(srv.Schemas()))
	if ready != nil {
		ready(listeners[0].Addr(), adminAddr)
	}

	var serveErr error
	running := len(servers)
	select {
	case err := <-served:
		serveErr = fmt.Errorf("serving HTTP: %w", err)
		running--
	case <-ctx.Done():
		log.Info("lbd-config-server stopping", "timeout", cfg.ShutdownTimeout)
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil {
			log.Warn("lbd-config-server: requests cut at shutdown", "err", err)
			hs.Close()
		}
	}
	for range running {
		<-served
	}
	if err := srv.Close(); err != nil {
		log.Warn("lbd-config-server: closing the backend", "err", err)
	}
	if serveErr != nil {
		return serveErr
	}
	log.Info("lbd-config-server stopped")
	return nil
}

// listen opens the clients' listener and, unless -admin-listen is empty, the admin one, which
// must be on loopback unless there is an admin token. On error nothing stays open.
func listen(cfg config, haveToken bool) ([]net.Listener, error) {
	public, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	if cfg.AdminListen == "" {
		return []net.Listener{public}, nil
	}
	admin, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		public.Close()
		return nil, fmt.Errorf("admin listener on %s: %w", cfg.AdminListen, err)
	}
	if addr, ok := admin.Addr().(*net.TCPAddr); !haveToken && (!ok || !addr.IP.IsLoopback()) {
		admin.Close()
		public.Close()
		return nil, fmt.Errorf("the admin address %s is not loopback, so anyone reaching it could take the server offline: "+
			"give an admin token (-admin-token-file or $%s) or an address such as %s", cfg.AdminListen, adminTokenEnv, defaultAdminListen)
	}
	return []net.Listener{public, admin}, nil
}

func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// offIfNotPositive maps the flag's "0 or negative: off" to the package's negative value (for
// which zero means its default).
func offIfNotPositive(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
