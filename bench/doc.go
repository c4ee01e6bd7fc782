// Package bench holds lbd's benchmarks through the in-process cluster: per-statement overhead
// through lbd against plain go-sql-driver on the same proxy, how statements spread over the
// proxies in each balance mode, and bench/compare's workload (BenchmarkWorkload,
// BenchmarkWorkloadCausal) with each of lbd's features against a direct connection, as ratios
// taken in one run. The node table's pick at cluster sizes from 3 to 50 000 nodes is
// benchmarked beside it, in the root module's internal/nodetable.
//
//	go test -run '^$' -bench . -benchmem ./bench/
//	go test -run '^$' -bench 'Pick|WarmupTick' -benchmem ./internal/nodetable/
//
// Compare figures only as ratios taken in one run: absolute numbers move with the machine's load.
package bench
