package nodestest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// A node source's settings often hold a secret (a password, a token). lbd's own sources print
// them through nodes.Printed, with the secret replaced; NoSecrets checks that every way a
// program may print such a value hides it, for lbd's types and for a source written outside lbd.

// Printings renders v every way a program may print it: the fmt verbs %v %+v %#v %s %q and
// fmt.Sprint, log/slog's text and JSON handlers (as an attribute value and through
// slog.Any), encoding/json, and an error that embeds v. The map's keys name each way.
func Printings(v any) map[string]string {
	out := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		out["fmt "+verb] = fmt.Sprintf(verb, v)
	}
	out["fmt.Sprint"] = fmt.Sprint(v)
	out["fmt.Errorf"] = fmt.Errorf("opening: %v", v).Error()
	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"slog JSON": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		l := slog.New(h(&b))
		l.Info("value", "v", v)
		l.Info("any", slog.Any("v", v))
		l.Info("group", slog.Group("g", "v", v))
		out[name] = b.String()
	}
	if data, err := json.Marshal(v); err != nil {
		out["encoding/json"] = "error: " + err.Error()
	} else {
		out["encoding/json"] = string(data)
	}
	return out
}

// NoSecrets fails t (with t.Errorf, so that every way is reported) for every way of printing v
// (the keys of Printings) whose output contains one of secrets, and for every way whose output
// does not contain shown, the part that must stay visible, such as a host name, so that a value
// printing nothing cannot pass; an empty shown checks nothing. name labels v in the failures.
// skip names ways (keys of Printings, such as "encoding/json") that v's type leaves to others
// on purpose: a document whose JSON is its storage format.
func NoSecrets(t testing.TB, name string, v any, shown string, secrets []string, skip ...string) {
	t.Helper()
	for way, s := range Printings(v) {
		if contains(skip, way) {
			continue
		}
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Errorf("%s printed with %s shows the secret %q:\n%s", name, way, secret, s)
			}
		}
		if shown != "" && !strings.Contains(s, shown) {
			t.Errorf("%s printed with %s does not show %q:\n%s", name, way, shown, s)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
