package nodes_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

// Printing a Document never shows its API keys; its JSON, the stored document, keeps them.
func TestPrintingADocumentHidesItsKeys(t *testing.T) {
	const key = "s3cr3t-api-key-XYZ"
	d, err := nodes.ParseDocument([]byte(`{"schema":"im_user","auth.enable":true,"api.keys":["`+key+`"],"proxy":["proxy.example:2883"]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	nodestest.NoSecrets(t, "Document", *d, "proxy.example", []string{key}, "encoding/json")
	nodestest.NoSecrets(t, "*Document", d, "proxy.example", []string{key}, "encoding/json")
	data, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(data), key) {
		t.Fatalf("JSON %s, %v: the stored document lost its key", data, err)
	}
	back, err := nodes.ParseDocument(data, "im_user")
	if err != nil || len(back.APIKeys) != 1 || back.APIKeys[0] != key {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}
