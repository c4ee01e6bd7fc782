package clusterkit

import (
	"os/exec"
	"runtime"
	"testing"
)

// CPULoad starts n CPU-bound processes beside the test (a shell spinning in a loop), as a
// production host is never quiet: other tenants, GC, noisy neighbours. They stop when the test
// ends. Shares, spreads and timings are judged beside them, with margins; a test that passes
// only on a quiet machine is a defect. It skips the test where no POSIX shell is to be had.
func CPULoad(t testing.TB, n int) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("CPULoad needs a POSIX shell")
	}
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting a CPU-bound process: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
