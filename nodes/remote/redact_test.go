package remote

import (
	"testing"

	"github.com/lbd-go/lbd/nodes/nodestest"
)

// No way of printing a Config, a Source or its client shows the API key.
func TestPrintingHidesTheAPIKey(t *testing.T) {
	const key = "s3cr3t-api-key-XYZ"
	secrets := []string{key}
	cfg := Config{Servers: []string{"cs.example:8080"}, Schema: "im_user", APIKey: key, DisableCache: true}
	nodestest.NoSecrets(t, "Config", cfg, "cs.example", secrets)
	nodestest.NoSecrets(t, "*Config", &cfg, "cs.example", secrets)
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	nodestest.NoSecrets(t, "*Source", src, "cs.example", secrets) // it holds locks: never copied
	// The client has no exported field: its JSON is {}, which shows nothing at all.
	nodestest.NoSecrets(t, "client", *src.cl, "im_user", secrets, "encoding/json", "slog JSON")
	nodestest.NoSecrets(t, "*client", src.cl, "im_user", secrets, "encoding/json", "slog JSON")
}
