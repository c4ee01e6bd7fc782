package gormtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/gormplugin"
	"github.com/lbd-go/lbd/lbdtest"
)

// Open adds the plugin, and closing the *sql.DB closes the connector.
func TestOpenAndClose(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	p := &gormplugin.Plugin{RetryReads: true}
	cfg := &gorm.Config{Logger: &recLogger{}, Plugins: map[string]gorm.Plugin{gormplugin.Name: p}}
	db, err := gormplugin.Open(cl.DSN(""), cfg, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	if p.Connector == nil || db.Config.Plugins[gormplugin.Name] != p {
		t.Fatal("Open did not complete and use the listed plugin")
	}
	// With no Sorter of its own, the plugin sorts errors with its Connector's.
	if s := p.Connector.ExceptionSorter(); p.Sorter != nil || s != exception.Default {
		t.Errorf("sorter for the DSN's default exceptionSorter = %T (plugin's own %T), want exception.Default", s, p.Sorter)
	}
	var one int
	if err := db.Raw("SELECT 1").Scan(&one).Error; err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	if err := sqlDB.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Connector.Connect(context.Background()); !errors.Is(err, lbd.ErrClosed) {
		t.Fatalf("Connect after closing the *sql.DB: %v, want lbd.ErrClosed", err)
	}
}

// Open adds a plugin of its own when none is listed.
func TestOpenAddsPlugin(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	db, err := gormplugin.Open(cl.DSN(""), &gorm.Config{Logger: &recLogger{}}, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	p, ok := db.Config.Plugins[gormplugin.Name].(*gormplugin.Plugin)
	if !ok || p.Connector == nil || p.RetryReads {
		t.Fatalf("plugin = %#v", db.Config.Plugins[gormplugin.Name])
	}
	if err := db.Use(&gormplugin.Plugin{}); !errors.Is(err, gorm.ErrRegistered) {
		t.Fatalf("second plugin: %v, want gorm.ErrRegistered", err)
	}
}

// A failed Open leaves nothing running (the leak check in TestMain sees the rest).
func TestOpenErrors(t *testing.T) {
	if _, err := gormplugin.Open("root:@tcp(127.0.0.1:1)/test", nil); err == nil {
		t.Error("Open accepted a DSN without the lb network")
	}
	cl := lbdtest.NewCluster(t, 2)
	for _, p := range cl.Proxies() {
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gormplugin.Open(cl.DSN("timeout=1s"), &gorm.Config{Logger: &recLogger{}}, quiet()...); err == nil {
		t.Error("Open succeeded with every proxy stopped")
	}
	other, err := lbd.NewConnector(cl.DSN(""), quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	cfg := &gorm.Config{Plugins: map[string]gorm.Plugin{gormplugin.Name: &gormplugin.Plugin{Connector: other}}}
	if _, err := gormplugin.Open(cl.DSN(""), cfg, quiet()...); err == nil {
		t.Error("Open accepted a listed plugin bound to another connector")
	}
	cfg = &gorm.Config{Plugins: map[string]gorm.Plugin{gormplugin.Name: fakePlugin{}}}
	if _, err := gormplugin.Open(cl.DSN(""), cfg, quiet()...); err == nil {
		t.Error("Open accepted a foreign plugin under its name")
	}
}

type fakePlugin struct{}

func (fakePlugin) Name() string              { return gormplugin.Name }
func (fakePlugin) Initialize(*gorm.DB) error { return nil }

// GORM renders SQL itself for its log, ToSQL and dry runs; times there must be in the DSN's
// loc, as go-sql-driver sends them.
func TestGORMRendersTimesInTheDSNLocation(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // 11:04:05 in Shanghai (UTC+8, no DST)
	for name, open := range map[string]func(dsn string) (*gorm.DB, error){
		"Open": func(dsn string) (*gorm.DB, error) { return gormplugin.Open(dsn, &gorm.Config{Logger: logger.Discard}) },
		"Dialector": func(dsn string) (*gorm.DB, error) {
			c, err := lbd.NewConnector(dsn)
			if err != nil {
				return nil, err
			}
			return gorm.Open(gormplugin.Dialector(c), &gorm.Config{Logger: logger.Discard})
		},
	} {
		t.Run(name, func(t *testing.T) {
			db, err := open(cl.DSN("parseTime=true&loc=Asia%2FShanghai"))
			if err != nil {
				t.Fatal(err)
			}
			sqlDB, _ := db.DB()
			defer sqlDB.Close()
			sql := db.ToSQL(func(tx *gorm.DB) *gorm.DB {
				var n []map[string]any
				return tx.Table("t").Where("at = ?", at).Find(&n)
			})
			if !strings.Contains(sql, "11:04:05") {
				t.Fatalf("ToSQL rendered %q, want the time in Asia/Shanghai (11:04:05)", sql)
			}
		})
	}
}
