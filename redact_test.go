package lbd

import (
	"testing"

	"github.com/lbd-go/lbd/nodes/nodestest"
)

// Distinctive secrets, so that a match can only be a leak.
const (
	testPassword = "s3cr3t-db-password-XYZ"
	testAPIKey   = "s3cr3t-api-key-XYZ"
)

// No way of printing a Config, a nodes.SourceConfig or a Connector shows the DSN's password or a
// source's secret parameter.
func TestPrintingHidesSecrets(t *testing.T) {
	secrets := []string{testPassword, testAPIKey}
	cfg, err := ParseDSN("app:" + testPassword + "@lbdsnone(cs.example:8080)/db?dsnOneSchema=s&dsnOneApiKey=" + testAPIKey)
	if err != nil {
		t.Fatal(err)
	}
	nodestest.NoSecrets(t, "Config", *cfg, "cs.example", secrets)
	nodestest.NoSecrets(t, "*Config", cfg, "cs.example", secrets)

	c, err := NewConnector("app:"+testPassword+"@lb(node.example:2883)/db", WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodestest.NoSecrets(t, "*Connector", c, "node.example", secrets) // it holds locks: never copied
}
