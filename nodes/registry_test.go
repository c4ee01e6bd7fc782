package nodes_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

// Distinctive secrets, so that a match can only be a leak.
const (
	testPassword = "s3cr3t-db-password-XYZ"
	testAPIKey   = "s3cr3t-api-key-XYZ"
)

func newStatic(nodes.SourceConfig) (nodes.Source, error) { return nodes.StaticAddrs("10.0.0.1:1"), nil }

// lbregtest is registered once per test binary: Register panics on a second registration, and
// -count=N runs the tests again in the same process.
func init() {
	nodes.Register("lbregtest", nodes.SourceFactory{
		Params:  []string{"regTestSchema", "regTestApiKey"},
		Secrets: []string{"regTestApiKey"},
		New:     newStatic,
	})
}

func TestRegisterAndLookup(t *testing.T) {
	f, ok := nodes.Lookup("lbregtest")
	if !ok || f.New == nil || !slices.Equal(f.Params, []string{"regTestSchema", "regTestApiKey"}) {
		t.Fatalf("Lookup(lbregtest) = %+v, %v; want the registered factory", f, ok)
	}
	if _, ok := nodes.Lookup("lbnotregistered"); ok {
		t.Fatal("Lookup found a network nobody registered")
	}
	params := nodes.RegisteredParams()
	if !slices.IsSorted(params) || !slices.Contains(params, "regTestSchema") || !slices.Contains(params, "regTestApiKey") {
		t.Fatalf("RegisteredParams() = %v, want lbregtest's parameters, sorted", params)
	}
}

func TestRegisterPanicsOnProgrammingErrors(t *testing.T) {
	for _, tc := range []struct {
		name, network string
		f             nodes.SourceFactory
		want          string
	}{
		{"empty name", "", nodes.SourceFactory{New: newStatic}, `invalid network name ""`},
		{"the static list's network", "lb", nodes.SourceFactory{New: newStatic}, `invalid network name "lb"`},
		{"nil New", "lbregnilnew", nodes.SourceFactory{}, "nil New for lbregnilnew"},
		{"twice", "lbregtest", nodes.SourceFactory{New: newStatic}, "network lbregtest registered twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Fatalf("Register(%q) panicked with %v, want a message containing %q", tc.network, r, tc.want)
				}
			}()
			nodes.Register(tc.network, tc.f)
		})
	}
	if _, ok := nodes.Lookup("lbregnilnew"); ok {
		t.Fatal("a refused factory was registered")
	}
}

func TestSourceConfigDuration(t *testing.T) {
	sc := nodes.SourceConfig{Params: map[string]string{
		"okSeconds": "30", "okMillis": "1500", "zero": "0", "negative": "-1", "word": "5s",
		"dayMillis": "86400000", "overDaySeconds": "86401",
	}}
	for _, tc := range []struct {
		name    string
		unit    time.Duration
		want    time.Duration
		wantErr string
	}{
		{"absent", time.Second, 0, ""},
		{"okSeconds", time.Second, 30 * time.Second, ""},
		{"okMillis", time.Millisecond, 1500 * time.Millisecond, ""},
		{"dayMillis", time.Millisecond, 24 * time.Hour, ""},
		{"zero", time.Second, 0, `invalid DSN parameter zero="0": must be a whole number of seconds from 1 to 86400 (a day)`},
		{"negative", time.Millisecond, 0, `negative="-1": must be a whole number of milliseconds from 1 to 86400000`},
		{"word", time.Second, 0, `word="5s"`},
		{"overDaySeconds", time.Second, 0, `overDaySeconds="86401"`},
	} {
		got, err := sc.Duration(tc.name, tc.unit)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("Duration(%s) = %v, %v; want %v", tc.name, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Duration(%s) = %v, %v; want an error containing %q", tc.name, got, err, tc.wantErr)
		}
	}
}

// No way of printing a SourceConfig shows a source's secret parameter: the registered
// network's Secrets, or, for a network nobody registered, parameters whose names say so.
func TestPrintingASourceConfigHidesSecrets(t *testing.T) {
	secrets := []string{testPassword, testAPIKey}
	sc := nodes.SourceConfig{Network: "lbregtest", Addrs: []string{"cs.example:8080"},
		Params: map[string]string{"regTestSchema": "s", "regTestApiKey": testAPIKey}}
	nodestest.NoSecrets(t, "SourceConfig", sc, "cs.example", secrets)
	nodestest.NoSecrets(t, "*SourceConfig", &sc, "cs.example", secrets)
	sc = nodes.SourceConfig{Network: "lbunknown", Addrs: []string{"cs.example:8080"},
		Params: map[string]string{"somePassword": testPassword, "apiToken": testAPIKey}}
	nodestest.NoSecrets(t, "SourceConfig of an unknown network", sc, "cs.example", secrets)

	red := nodes.RedactParams("lbregtest", map[string]string{"regTestSchema": "im_user", "regTestApiKey": testAPIKey})
	if red["regTestSchema"] != "im_user" || red["regTestApiKey"] != "***" {
		t.Fatalf("RedactParams = %v, want the schema shown and the key masked", red)
	}
}
