package configserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/lbd-go/lbd/configserver"
)

// Example runs a config-server in-process on a file of documents, as a test of a client would,
// and fetches a list the way lb-driver and lbd do.
func Example() {
	dir, err := os.MkdirTemp("", "configserver-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "schemas.json")
	docs := `[
	  {"schema":"im_user","auth.enable":true,"api.keys":["k1"],
	   "proxy":["127.0.0.2:2883","127.0.0.1:2883"]}
	]`
	if err := os.WriteFile(path, []byte(docs), 0o600); err != nil {
		log.Fatal(err)
	}

	quiet := slog.New(slog.DiscardHandler)
	backend, err := configserver.NewFile(configserver.FileConfig{Path: path, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := configserver.New(context.Background(), configserver.Config{
		Backend:       backend,
		Logger:        quiet,
		ProbeInterval: -1, // no background TCP probes of the (made-up) proxies
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	fetch := func(query, key string) []byte {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/fetch_sql_proxy_list?"+query, nil)
		req.Header.Set("Accept", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(body))
		return body
	}
	var first struct{ MD5 string }
	_ = json.Unmarshal(fetch("schema=im_user", "k1"), &first)
	fetch("schema=im_user&md5="+first.MD5, "k1") // nothing changed
	fetch("schema=im_user", "")                  // no key
	fetch("schema=unknown", "")
	// Output:
	// 200 {"code":200,"md5":"9e6ec04d393ab618414476fb5fb651c9","data":["127.0.0.1:2883","127.0.0.2:2883"]}
	// 200 {"code":304}
	// 403 {"code":403,"msg":"missing api key","data":null}
	// 200 {"code":404}
}
