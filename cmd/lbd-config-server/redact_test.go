package main

import (
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

func TestEtcdPasswordIsNeverPrinted(t *testing.T) {
	const secret = "cmd-etcd-pa55-QZX"
	c := defaults()
	c.Etcd.Prefix = "/lbd/visible"
	c.Etcd.Password = secret
	testkit.NoSecrets(t, "etcdConfig", c.Etcd, "/lbd/visible", []string{secret})
	testkit.NoSecrets(t, "config", c, "/lbd/visible", []string{secret})
}
