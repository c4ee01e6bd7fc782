package nodestest_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/lbd-go/lbd/nodes/nodestest"
)

// A Manual source's pushes reach Updates in order, from several goroutines at once.
func TestUpdatesCollectsWhatASourcePushes(t *testing.T) {
	var u nodestest.Updates
	if u.Len() != 0 || len(u.Last().Nodes) != 0 {
		t.Fatalf("a new Updates holds %d sets, last %v", u.Len(), u.Last().Addrs())
	}
	m := nodestest.New("10.0.0.1:3306")
	if _, err := m.Start(t.Context(), u.Push); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := m.Push(nodestest.SetOf("10.0.0.2:3306")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := m.Push(nodestest.SetOf("10.0.0.3:3306", "10.0.0.4:3306")); err != nil {
		t.Fatal(err)
	}
	if n := u.Len(); n != 9 {
		t.Fatalf("%d sets collected, want 9", n)
	}
	if got := u.Last().Addrs(); !slices.Equal(got, []string{"10.0.0.3:3306", "10.0.0.4:3306"}) {
		t.Fatalf("last set %v, want the last pushed", got)
	}
}
