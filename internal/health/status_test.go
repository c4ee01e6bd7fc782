package health

import (
	"strings"
	"testing"
)

// TestStatusURLTemplate: a node's status URL fills the template's placeholders, an IPv6 host in
// brackets; a template lbd cannot use is refused with the reason; a query is left out of
// messages.
func TestStatusURLTemplate(t *testing.T) {
	const tmpl = "http://{host}:10080/status?port={port}"
	if got := statusURLFor(tmpl, "::1", "4000"); got != "http://[::1]:10080/status?port=4000" {
		t.Fatalf("IPv6 host: %s", got)
	}
	if got := statusURLFor(tmpl, "10.0.0.1", "4000"); got != "http://10.0.0.1:10080/status?port=4000" {
		t.Fatalf("IPv4 host: %s", got)
	}
	if err := CheckStatusTemplate(tmpl); err != nil {
		t.Fatalf("%s: %v", tmpl, err)
	}
	for _, tc := range []struct{ tmpl, want string }{
		{"http://10.0.0.9:10080/status", "must hold {host}"},
		{"ftp://{host}/status", "must be an http or https URL"},
		{"http://admin:pw@{host}:1/", "no user or password"},
		{"{host}", "must be an http or https URL"},
	} {
		if err := CheckStatusTemplate(tc.tmpl); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.tmpl, err, tc.want)
		}
	}
	if got := redactURL("http://h:1/status?token=secret"); got != "http://h:1/status?..." {
		t.Fatalf("redactURL: %s", got)
	}
}
