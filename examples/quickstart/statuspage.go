package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/status"
)

// statusPath is where the demo mounts lbd's status page, as net/http/pprof mounts under
// /debug/pprof/.
const statusPath = "/debug/lbd/"

// statusServer serves lbd's status page of one Connector over HTTP.
type statusServer struct {
	page *status.Handler
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// serveStatus starts serving c's status page on addr ("127.0.0.1:0": a free loopback port).
func serveStatus(c *lbd.Connector, addr string) (*statusServer, error) {
	page, err := status.New(c, status.Options{SampleInterval: time.Second, Window: 5 * time.Minute})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		page.Close()
		return nil, fmt.Errorf("status page: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(statusPath, page)
	s := &statusServer{page: page, ln: ln, done: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// URL returns the page's address.
func (s *statusServer) URL() string { return "http://" + s.ln.Addr().String() + statusPath }

// Close stops the server, waiting up to a second for requests in flight, and the sampling.
func (s *statusServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, s.page.Close())
}
