package ring

import (
	"slices"
	"testing"
)

func TestRingKeepsTheLatest(t *testing.T) {
	r := New[int](3)
	if got := r.List(); len(got) != 0 {
		t.Fatalf("empty ring lists %v", got)
	}
	r.Add(1)
	r.Add(2)
	if got := r.List(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("List = %v, want [1 2]", got)
	}
	for i := 3; i <= 7; i++ {
		r.Add(i)
	}
	if got := r.List(); !slices.Equal(got, []int{5, 6, 7}) {
		t.Fatalf("List = %v, want the latest three, oldest first", got)
	}
}
