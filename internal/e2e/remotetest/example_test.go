package remotetest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/remote"
)

// configServer answers lb-driver's fetch_sql_proxy_list with a fixed list: the whole list
// when the client's md5 is not the list's, {"code":304} when it is.
func configServer(list []string) *httptest.Server {
	sum := nodes.ListMD5(list)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("md5") == sum {
			io.WriteString(w, `{"code":304}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"code": 200, "md5": sum, "data": list})
	}))
}

// The DSN names the config-servers and the schema; the Connector takes its proxies from them.
// In production it reads like
//
//	app:secret@lbremote(cs1.example:8080,cs2.example:8080)/im?configServerSchema=im_user&configServerApiKey=key
//
// Here two in-process proxies are listed by an in-process config-server, and the cache is off
// (configServerCacheDir present but empty).
func Example() {
	cluster, err := lbdtest.Start(2)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	cs := configServer(cluster.Addrs())
	defer cs.Close()

	dsn := fmt.Sprintf("%s:%s@lbremote(%s)/%s?configServerSchema=im_user&configServerCacheDir=",
		cluster.User(), cluster.Password(), strings.TrimPrefix(cs.URL, "http://"), cluster.Database())
	connector, err := lbd.NewConnector(dsn, lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		log.Fatal(err)
	}
	fmt.Println("proxies from the config-server:", len(connector.Stats().Nodes))
	fmt.Println("SELECT 1 =", one)
	// Output:
	// proxies from the config-server: 2
	// SELECT 1 = 1
}

// remote.New builds the source in code, where intervals may be shorter than a second; the DSN
// then names no proxy.
func Example_new() {
	cluster, err := lbdtest.Start(2)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	cs := configServer(cluster.Addrs())
	defer cs.Close()

	src, err := remote.New(remote.Config{
		Servers:      []string{strings.TrimPrefix(cs.URL, "http://")},
		Schema:       "im_user",
		PollInterval: 500 * time.Millisecond,
		DisableCache: true,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	dsn := fmt.Sprintf("%s:%s@lb()/%s", cluster.User(), cluster.Password(), cluster.Database())
	connector, err := lbd.NewConnector(dsn, lbd.WithSource(src), lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close() // closes the Connector, which closes the source

	if _, err := db.Exec("SELECT 1"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("proxies:", len(connector.Stats().Nodes), "degraded:", src.Degraded())
	// Output:
	// proxies: 2 degraded: false
}
