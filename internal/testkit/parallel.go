package testkit

import (
	"flag"
	"strconv"
)

// DefaultParallel sets -test.parallel to n unless the command line gives it, for a package
// whose parallel tests wait on deadlines and timers rather than the CPU. Call it from TestMain
// before m.Run; it parses the flags.
func DefaultParallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}
