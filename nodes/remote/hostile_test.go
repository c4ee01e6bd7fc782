package remote

import (
	"context"
	"errors"
	"github.com/lbd-go/lbd/internal/remotefake"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/nodes"
)

// A config-server answer never sends lbd elsewhere: a redirect to another port (or host, or
// from https to http) is not followed, so the API key stays with the configured server and
// the other server's list is not applied.
func TestRedirectIsNotFollowed(t *testing.T) {
	const key = "k-redirect-secret"
	cs, elsewhere := remotefake.New(t), remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	elsewhere.SetList("s", "10.9.9.9:1")
	cs.SetRedirect(elsewhere.URL())
	cs.SetFault("redirect")
	src, err := New(Config{Servers: []string{cs.Addr()}, Schema: "s", APIKey: key, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), "redirects to "+elsewhere.URL()) {
		t.Fatalf("Start = %v, %v; want ErrBadAnswer naming where the redirect points", set.Addrs(), err)
	}
	if strings.Contains(err.Error(), key) {
		t.Fatalf("the error shows the API key: %v", err)
	}
	if n := elsewhere.Count(); n != 0 {
		t.Fatalf("the redirect was followed: %d requests reached the other server, with Authorization %q",
			n, elsewhere.Requests()[0].Auth)
	}
}

// The md5 a client sends back must be the md5 lb-driver's protocol defines: exactly 32 hex
// characters. Anything else refuses the whole answer, and is never sent back.
func TestDecodeAnswerChecksTheMD5(t *testing.T) {
	srv := server{name: "cs1:8080"}
	for name, md5 := range map[string]string{
		"huge":      strings.Repeat("a", 3<<19),
		"short":     strings.Repeat("a", 31),
		"long":      strings.Repeat("a", 33),
		"not hex":   strings.Repeat("g", 32),
		"space":     strings.Repeat("a", 16) + " " + strings.Repeat("a", 15),
		"control":   strings.Repeat("a", 31) + "\n",
		"non-ascii": strings.Repeat("a", 30) + "é",
	} {
		body := `{"code":200,"md5":"` + strings.ReplaceAll(md5, "\n", `\n`) + `","data":["10.0.0.1:1"]}`
		got, err := decode(srv, 200, []byte(body), false)
		if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), "md5") {
			t.Errorf("%s: got %+v, %v; want ErrBadAnswer about the md5", name, got.md5, err)
		}
		if err != nil && len(err.Error()) > 600 {
			t.Errorf("%s: the error is %d bytes long", name, len(err.Error()))
		}
	}
	upper := strings.Repeat("AB", 16)
	if got, err := decode(srv, 200, []byte(`{"code":200,"md5":"`+upper+`","data":["10.0.0.1:1"]}`), false); err != nil || got.md5 != upper {
		t.Errorf("upper-case hex md5: %+v, %v", got, err)
	}
}

// Entries are compared, and handed on, in canonical form: two spellings of one node are a
// duplicate, and the AZ fallback looks nodes up by the name the Connector uses.
func TestDecodeAnswerCanonicalEntries(t *testing.T) {
	srv := server{name: "cs1:8080"}
	for _, data := range []string{`["LOCALHOST:1","localhost:1"]`, `["[::1]:1","[0:0:0:0:0:0:0:1]:1"]`,
		`["10.0.0.1:1","[::ffff:10.0.0.1]:1"]`, `["a.example:1","a.example:001"]`} {
		if got, err := decode(srv, 200, []byte(`{"code":200,"data":`+data+`}`), false); !errors.Is(err, ErrMalformedEntry) ||
			!strings.Contains(err.Error(), "listed twice") {
			t.Errorf("%s: got %v, %v; want a duplicate", data, got.list, err)
		}
	}
	got, err := decode(srv, 200, []byte(`{"code":200,"data":["DB.Example:01","[0:0:0:0:0:0:0:1]:2"]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db.example:1", "[::1]:2"}; strings.Join(got.list, ",") != strings.Join(want, ",") {
		t.Errorf("list %v, want %v", got.list, want)
	}
	// Without an md5 the client computes the one lb-driver's config-server would have sent,
	// over the entries as the server spelled them.
	if want := nodes.ListMD5([]string{"DB.Example:01", "[0:0:0:0:0:0:0:1]:2"}); got.md5 != want {
		t.Errorf("md5 %s, want %s", got.md5, want)
	}
}

// JSON nested a million levels deep is refused, not a crash.
func TestDecodeAnswerDeeplyNested(t *testing.T) {
	const depth = 1 << 20
	body := `{"code":200,"data":["10.0.0.1:1"],"extra":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
	if _, err := decode(server{name: "cs"}, 200, []byte(body), false); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("got %v, want ErrBadAnswer", err)
	}
}

// Text from a config-server in an error is cut short and shows no control characters, so it
// cannot forge log lines.
func TestServerTextIsSanitised(t *testing.T) {
	_, err := decode(server{name: "cs"}, 403, []byte(`{"code":403,"msg":"no\nWARN forged line\u001b[31m`+strings.Repeat("x", 1000)+`"}`), false)
	if err == nil || strings.ContainsAny(err.Error(), "\n\x1b") || len(err.Error()) > 600 {
		t.Fatalf("error %q", err)
	}
}

// An API key goes into an HTTP header and is compared byte for byte: one with spaces or
// control characters can never match, and is refused up front without being shown.
func TestAPIKeyIsChecked(t *testing.T) {
	for name, key := range map[string]string{
		"leading space":  " k-secret",
		"trailing space": "k-secret ",
		"newline":        "k-secret\n",
		"inner space":    "k secret",
		"control":        "k\x00secret",
		"non-ascii":      "k-sécret",
	} {
		_, err := New(Config{Servers: []string{"cs:8080"}, Schema: "s", APIKey: key, DisableCache: true})
		if err == nil || !strings.Contains(err.Error(), "APIKey") || !strings.Contains(err.Error(), "configServerApiKey") {
			t.Errorf("%s: New = %v, want an error naming the key's setting", name, err)
		} else if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "sécret") {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
	if _, err := New(Config{Servers: []string{"cs:8080"}, Schema: "s", APIKey: "Ab0-._~+/=", DisableCache: true}); err != nil {
		t.Errorf("a plain key: %v", err)
	}
}

// What the client sends is bounded: the schema and AZ, the only free text in a request, have
// a length limit and no control characters.
func TestRequestTextIsBounded(t *testing.T) {
	for name, cfg := range map[string]Config{
		"long schema":     {Schema: strings.Repeat("s", 2000)},
		"schema with \\n": {Schema: "s\nx"},
		"long AZ":         {Schema: "s", AZ: strings.Repeat("a", 2000)},
		"AZ with a \\x00": {Schema: "s", AZ: "a\x00"},
	} {
		cfg.Servers, cfg.DisableCache = []string{"cs:8080"}, true
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// decode is decodeAnswer with its error as an error value (nil when there is none).
func decode(srv server, status int, body []byte, sentMD5 bool) (answer, error) {
	a, err := decodeAnswer(srv, status, body, sentMD5)
	if err != nil {
		return a, err
	}
	return a, nil
}
