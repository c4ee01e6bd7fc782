// Package bench holds lbd's benchmarks: the pick index at cluster sizes from 3 to 50 000 nodes,
// per-statement overhead through lbd against plain go-sql-driver on the same proxy, and
// bench/compare's workload (BenchmarkWorkload, BenchmarkWorkloadCausal) with each of lbd's
// features against a direct connection, as ratios taken in one run.
//
//	go test -run '^$' -bench . -benchmem ./bench/
//
// Compare figures only as ratios taken in one run: absolute numbers move with the machine's load.
package bench
