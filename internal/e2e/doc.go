// Package e2e holds end-to-end tests that run lb-driver's acceptance scenarios across the whole
// stack: an embedded etcd holds the schema document, lbd's config-server follows it, the
// nodes/remote source polls the config-server, and a Connector balances a live workload over
// lbdtest proxies. The package has no non-test code.
package e2e
