package etcd

import (
	"testing"

	"github.com/lbd-go/lbd/nodes/nodestest"
)

// No way of printing a Config or a Source shows the etcd password.
func TestPrintingHidesThePassword(t *testing.T) {
	const password = "s3cr3t-etcd-password-XYZ"
	secrets := []string{password}
	cfg := Config{Endpoints: []string{"etcd.example:2379"}, Key: "/lbd/schemas/im_user", Username: "root", Password: password}
	nodestest.NoSecrets(t, "Config", cfg, "etcd.example", secrets)
	nodestest.NoSecrets(t, "*Config", &cfg, "etcd.example", secrets)
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	nodestest.NoSecrets(t, "*Source", src, "etcd.example", secrets) // it holds locks: never copied
}
