package lbd

import (
	"errors"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/statushook"
)

// TestStatusURLParameter: statusURL survives go-sql-driver's parser with '/' written %2F, is
// written back the same way, and a template lbd cannot use is refused with the reason.
func TestStatusURLParameter(t *testing.T) {
	cfg, err := ParseDSN("u:p@lb(10.0.0.1:4000,10.0.0.2:4000)/db?statusURL=http:%2F%2F{host}:10080%2Fstatus")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StatusURL != "http://{host}:10080/status" {
		t.Fatalf("StatusURL = %q", cfg.StatusURL)
	}
	if _, ok := cfg.MySQL.Params["statusURL"]; ok {
		t.Fatal("statusURL reached go-sql-driver's session parameters")
	}
	again, err := ParseDSN(cfg.FormatDSN())
	if err != nil || again.StatusURL != cfg.StatusURL {
		t.Fatalf("formatted and parsed again: %q, %v", again.StatusURL, err)
	}
	for _, tc := range []struct{ value, want string }{
		{"http:%2F%2F10.0.0.9:10080%2Fstatus", "must hold {host}"},
		{"ftp:%2F%2F{host}%2Fstatus", "must be an http or https URL"},
		{"http:%2F%2Fadmin:pw@{host}:1%2F", "no user or password"},
		{"{host}", "must be an http or https URL"},
	} {
		_, err := ParseDSN("u:p@lb(10.0.0.1:4000)/db?statusURL=" + tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "statusURL") {
			t.Errorf("statusURL=%s: %v; want an error naming statusURL and saying %q", tc.value, err, tc.want)
		}
	}
}

// TestStatusURLNeedsTheStatusCheckPackage: the root does not link net/http, so a Connector with
// a statusURL in a program that did not import package statuscheck is refused, and the error
// names the import. (No test of this package imports statuscheck: its init would register the
// check for the whole test binary.)
func TestStatusURLNeedsTheStatusCheckPackage(t *testing.T) {
	if statushook.Registered() != nil {
		t.Fatal("a status check is registered in this test binary: a test of the root package imports statuscheck")
	}
	const dsn = "u:p@lb(127.0.0.1:1)/db?statusURL=http:%2F%2F{host}:10080%2Fstatus"
	c, err := NewConnector(dsn)
	if err == nil {
		c.Close()
		t.Fatal("a Connector with a statusURL was built without the HTTP status check")
	}
	if !errors.Is(err, health.ErrNoStatusCheck) || !strings.Contains(err.Error(), `import _ "github.com/lbd-go/lbd/statuscheck"`) {
		t.Fatalf("error %q does not name the import that provides the check", err)
	}
	if _, err := ParseDSN(dsn); err != nil {
		t.Fatalf("ParseDSN, which builds nothing, refused the DSN: %v", err)
	}
}
