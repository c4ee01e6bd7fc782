package lbdtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	vmysql "github.com/dolthub/vitess/go/mysql"
	"github.com/go-sql-driver/mysql"
)

// backendCloseWait bounds how long closing the in-memory backend waits for
// its connection handlers to finish.
const backendCloseWait = 10 * time.Second

// backend is the database server every proxy relays to.
type backend struct {
	network  string // "tcp" or "unix"
	addr     string
	user     string
	password string
	database string
	close    func() error
}

// newBackend starts the in-memory server, or describes the external one
// when EnvBackendDSN is set.
func newBackend(cfg config) (*backend, error) {
	if dsn := os.Getenv(EnvBackendDSN); dsn != "" {
		return externalBackend(dsn, cfg)
	}
	return memoryBackend(cfg)
}

// externalBackend checks that the server named by dsn answers a ping with
// the given credentials and returns it as the backend.
func externalBackend(dsn string, cfg config) (*backend, error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("lbdtest: parse %s: %w", EnvBackendDSN, err)
	}
	if mc.Net != "tcp" && mc.Net != "unix" {
		return nil, fmt.Errorf("lbdtest: %s: network %q not supported (want tcp or unix)", EnvBackendDSN, mc.Net)
	}
	if mc.DBName == "" {
		mc.DBName = cfg.database
	}
	mc.Timeout = 5 * time.Second
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("lbdtest: %s: %w", EnvBackendDSN, err)
	}
	db := sql.OpenDB(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = db.PingContext(ctx)
	cancel()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("lbdtest: backend from %s unreachable: %w", EnvBackendDSN, err)
	}
	return &backend{
		network:  mc.Net,
		addr:     mc.Addr,
		user:     mc.User,
		password: mc.Passwd,
		database: mc.DBName,
		close:    func() error { return nil },
	}, nil
}

// engineMu serialises the making of in-memory engines: go-mysql-server's New (re)sets the
// process-wide status variables, without a lock, so clusters started at once (parallel tests)
// raced there.
var engineMu sync.Mutex

// memoryBackend starts one MySQL-protocol listener on a loopback port
// over a fresh in-memory go-mysql-server database.
func memoryBackend(cfg config) (*backend, error) {
	db := memory.NewDatabase(cfg.database)
	db.BaseDatabase.EnablePrimaryKeyIndexes()
	pro := memory.NewDBProvider(db)
	engineMu.Lock()
	engine := sqle.NewDefault(pro)
	engineMu.Unlock()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = engine.Close()
		return nil, fmt.Errorf("lbdtest: backend listen: %w", err)
	}
	addr := ln.Addr().String()
	tl := &trackingListener{Listener: ln, conns: make(map[*trackedConn]struct{})}
	vl, err := vmysql.NewListenerWithConfig(vmysql.ListenerConfig{
		Listener:           tl,
		AuthServer:         engine.Analyzer.Catalog.MySQLDb,
		Handler:            newMemHandler(engine, pro, addr),
		ConnReadBufferSize: vmysql.DefaultConnBufferSize,
	})
	if err != nil {
		_ = ln.Close()
		_ = engine.Close()
		return nil, fmt.Errorf("lbdtest: backend server: %w", err)
	}
	vl.TLSConfig = cfg.tls
	served := make(chan struct{})
	go func() {
		defer close(served)
		vl.Accept()
	}()
	return &backend{
		network:  "tcp",
		addr:     addr,
		user:     "root",
		password: "",
		database: cfg.database,
		close: func() error {
			vl.Close()
			<-served
			var err error
			if !tl.shutdown(backendCloseWait) {
				err = errors.New("lbdtest: backend connections did not finish in time")
			}
			// Shutting down the engine's background work reports the
			// cancellation it uses to stop it; that is not a failure.
			if cerr := engine.Close(); cerr != nil && !errors.Is(cerr, context.Canceled) {
				err = errors.Join(err, cerr)
			}
			return err
		},
	}, nil
}

// trackingListener remembers the connections it hands to the server, so
// that shutdown can force them closed and wait for their handlers.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
	wg    sync.WaitGroup
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.wg.Add(1)
	l.mu.Unlock()
	return tc, nil
}

// shutdown waits up to a second for the server to finish the connections
// it still has (their clients are normally gone by now), then closes the
// sockets of the stragglers and waits for them until d has passed in all.
// It must be called only after Accept has stopped being called. It
// reports whether every connection finished.
func (l *trackingListener) shutdown(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	grace := time.NewTimer(time.Second)
	defer grace.Stop()
	select {
	case <-done:
		return true
	case <-grace.C:
	}
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Conn.Close()
	}
	l.mu.Unlock()
	rest := time.NewTimer(d - time.Second)
	defer rest.Stop()
	select {
	case <-done:
		return true
	case <-rest.C:
		return false
	}
}

// trackedConn reports its first Close to its listener.
type trackedConn struct {
	net.Conn
	l    *trackingListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.wg.Done()
	})
	return err
}
