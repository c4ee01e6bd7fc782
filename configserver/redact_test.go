package configserver

import (
	"testing"

	"github.com/lbd-go/lbd/nodes/nodestest"
)

func TestSecretsAreNeverPrinted(t *testing.T) {
	const password, token = "etcd-pa55word-QZX", "admin-t0ken-QZX-0123456789"
	ec := EtcdConfig{Endpoints: []string{"etcd-host.example:2379"}, Prefix: "/lbd", Username: "u", Password: password}
	e, err := NewEtcd(ec)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Backend: e, AdminToken: token}
	secrets := []string{password, token}
	nodestest.NoSecrets(t, "EtcdConfig", ec, "etcd-host.example", secrets)
	nodestest.NoSecrets(t, "*EtcdConfig", &ec, "etcd-host.example", secrets)
	nodestest.NoSecrets(t, "*Etcd", e, "etcd-host.example", secrets)
	nodestest.NoSecrets(t, "Config", c, "etcd-host.example", secrets)
	nodestest.NoSecrets(t, "*Config", &c, "etcd-host.example", secrets)
}
