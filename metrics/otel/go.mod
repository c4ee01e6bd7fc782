module github.com/lbd-go/lbd/metrics/otel

go 1.26.0

replace github.com/lbd-go/lbd => ../..

replace github.com/lbd-go/lbd/lbdtest => ../../lbdtest
