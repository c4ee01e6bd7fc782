package main

import (
	"testing"

	"github.com/lbd-go/lbd/nodes/nodestest"
)

func TestEtcdPasswordIsNeverPrinted(t *testing.T) {
	const secret = "cmd-etcd-pa55-QZX"
	c := defaults()
	c.Etcd.Prefix = "/lbd/visible"
	c.Etcd.Password = secret
	nodestest.NoSecrets(t, "etcdConfig", c.Etcd, "/lbd/visible", []string{secret})
	nodestest.NoSecrets(t, "config", c, "/lbd/visible", []string{secret})
}
