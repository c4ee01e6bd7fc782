package remote

import (
	"strings"
	"testing"
)

func TestDecodeWeightsRefusesBadAnswers(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unlisted": {`{"code":200,"data":["10.0.0.1:1"],"weight":{"10.0.0.2:1":2}}`, "which the answer does not list"},
		"range":    {`{"code":200,"data":["10.0.0.1:1"],"weight":{"10.0.0.1:1":70000}}`, "is not a whole number from 0 to 65535"},
		"string":   {`{"code":200,"data":["10.0.0.1:1"],"weight":{"10.0.0.1:1":"2"}}`, "is not a whole number"},
		"twice":    {`{"code":200,"data":["10.0.0.1:1"],"weight":{"10.0.0.1:1":2,"10.0.0.1:01":3}}`, "two weights"},
	} {
		_, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(tc.body), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
	a, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(`{"code":200,"data":["10.0.0.1:1","10.0.0.2:1"],"weight":{"10.0.0.1:1":0,"10.0.0.2:1":4}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.weights) != 1 || a.weights["10.0.0.2:1"] != 4 {
		t.Fatalf("answer weights %v err %v, want only 10.0.0.2:1's 4", a.weights, err)
	}
}
