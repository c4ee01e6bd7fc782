package nodestest_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

const (
	host     = "db.example:3306"
	password = "pa55-word-QZX"
)

// plainSettings prints every field: each way of printing shows the password.
type plainSettings struct {
	Host, Password string
}

// hiding prints through nodes.Printed, its password replaced.
type hiding plainSettings

func (h hiding) printed() nodes.Printed {
	r := plainSettings(h)
	r.Password = nodes.Redact(h.Password)
	return nodes.Printed{
		Name:   "nodestest_test.hiding",
		Text:   fmt.Sprintf("{Host:%s Password:%s}", r.Host, r.Password),
		Fields: r,
		Attrs:  []slog.Attr{slog.String("host", h.Host), slog.Bool("password_set", h.Password != "")},
	}
}

func (h hiding) String() string               { return h.printed().String() }
func (h hiding) GoString() string             { return h.printed().GoString() }
func (h hiding) LogValue() slog.Value         { return h.printed().LogValue() }
func (h hiding) MarshalJSON() ([]byte, error) { return h.printed().MarshalJSON() }

// stringOnly hides the password in String alone: %#v, slog and JSON still show it.
type stringOnly plainSettings

func (s stringOnly) String() string { return "{Host:" + s.Host + " Password:***}" }

// recorder is a testing.TB that keeps what NoSecrets reports instead of failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// failures runs NoSecrets on v into a recorder and returns the ways it reported.
func failures(t *testing.T, v any, shown string, skip ...string) []string {
	r := &recorder{TB: t}
	nodestest.NoSecrets(r, "v", v, shown, []string{password}, skip...)
	return r.errors
}

func TestNoSecretsPassesAValueThatHidesItsSecret(t *testing.T) {
	v := hiding{Host: host, Password: password}
	for _, x := range []any{v, &v} {
		if errs := failures(t, x, host); len(errs) != 0 {
			t.Errorf("%T: NoSecrets reported:\n%s", x, strings.Join(errs, "\n"))
		}
	}
}

func TestNoSecretsReportsEveryWayThatShowsTheSecret(t *testing.T) {
	ways := len(nodestest.Printings(0))
	if errs := failures(t, plainSettings{Host: host, Password: password}, host); len(errs) != ways {
		t.Errorf("a plain struct: %d reports, want one for each of the %d ways:\n%s", len(errs), ways, strings.Join(errs, "\n"))
	}
	errs := failures(t, stringOnly{Host: host, Password: password}, host)
	for _, way := range []string{"fmt %#v", "slog JSON", "encoding/json"} {
		if !anyContains(errs, "printed with "+way+" shows the secret") {
			t.Errorf("String alone hides the password, yet %s was not reported:\n%s", way, strings.Join(errs, "\n"))
		}
	}
	for _, way := range []string{"fmt %v", "fmt %s", "fmt.Sprint", "slog text"} {
		if anyContains(errs, "printed with "+way+" ") {
			t.Errorf("%s uses String, which hides the password, yet it was reported:\n%s", way, strings.Join(errs, "\n"))
		}
	}
	if errs := failures(t, plainSettings{Host: host, Password: password}, host, "encoding/json"); len(errs) != ways-1 {
		t.Errorf("skipping encoding/json: %d reports, want %d", len(errs), ways-1)
	}
}

// A value that prints nothing hides every secret; the part that must stay visible catches it.
func TestNoSecretsReportsAValueThatHidesWhatMustShow(t *testing.T) {
	errs := failures(t, struct{}{}, host)
	if len(errs) != len(nodestest.Printings(0)) {
		t.Fatalf("%d reports for a value that shows nothing, want one per way:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if !strings.Contains(errs[0], "does not show "+fmt.Sprintf("%q", host)) {
		t.Errorf("report %q does not say what is missing", errs[0])
	}
}

// anyContains reports whether one of lines contains part.
func anyContains(lines []string, part string) bool {
	for _, l := range lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}
