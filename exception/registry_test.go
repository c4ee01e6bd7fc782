package exception

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// nameSeq keeps registered test names unique, also across -count runs in
// the same process (the registry is global and has no removal).
var nameSeq atomic.Int64

func uniqueName(t *testing.T) string {
	return fmt.Sprintf("test-%s-%d", t.Name(), nameSeq.Add(1))
}

type ptrSorter struct{}

func (*ptrSorter) IsFatal(err error) bool { return err != nil }

var alwaysFatal = SorterFunc(func(error) bool { return true })

func TestLookupDefault(t *testing.T) {
	s, ok := Lookup(DefaultName)
	if !ok {
		t.Fatalf("Lookup(%q) found nothing", DefaultName)
	}
	if s != Default {
		t.Errorf("Lookup(%q) = %#v, want Default", DefaultName, s)
	}
	if DefaultName != "mysql" {
		t.Errorf("DefaultName = %q, want %q", DefaultName, "mysql")
	}
	if !s.IsFatal(io.EOF) {
		t.Error("registered default does not apply the default rules")
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, name := range []string{"", "no-such-sorter", "MySQL", " mysql"} {
		if s, ok := Lookup(name); ok || s != nil {
			t.Errorf("Lookup(%q) = %v, %v; want nil, false", name, s, ok)
		}
	}
}

func TestRegisterAndLookup(t *testing.T) {
	name := uniqueName(t)
	if err := Register(name, alwaysFatal); err != nil {
		t.Fatalf("Register: %v", err)
	}
	s, ok := Lookup(name)
	if !ok {
		t.Fatal("registered sorter not found")
	}
	if !s.IsFatal(errors.New("x")) {
		t.Error("Lookup returned a different sorter")
	}
	if !slices.Contains(Names(), name) {
		t.Errorf("Names() = %v, missing %q", Names(), name)
	}
}

func TestRegisterDuplicate(t *testing.T) {
	err := Register(DefaultName, alwaysFatal)
	if !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("Register(DefaultName) error = %v, want ErrDuplicateName", err)
	}
	if s, _ := Lookup(DefaultName); s != Default {
		t.Error("failed registration replaced the default sorter")
	}

	name := uniqueName(t)
	if err := Register(name, alwaysFatal); err != nil {
		t.Fatalf("first Register: %v", err)
	}
	never := SorterFunc(func(error) bool { return false })
	if err := Register(name, never); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("second Register error = %v, want ErrDuplicateName", err)
	}
	if s, _ := Lookup(name); !s.IsFatal(errors.New("x")) {
		t.Error("failed registration replaced the first sorter")
	}
}

func TestRegisterEmptyName(t *testing.T) {
	before := Names()
	if err := Register("", alwaysFatal); !errors.Is(err, ErrEmptyName) {
		t.Fatalf("Register(\"\") error = %v, want ErrEmptyName", err)
	}
	if _, ok := Lookup(""); ok {
		t.Error("empty name was registered")
	}
	if after := Names(); len(after) < len(before) || slices.Contains(after, "") {
		t.Errorf("Names() changed unexpectedly: %v", after)
	}
}

func TestRegisterNil(t *testing.T) {
	var nilFunc SorterFunc
	var nilPtr *ptrSorter
	for _, tc := range []struct {
		name string
		s    Sorter
	}{
		{"nil interface", nil},
		{"nil SorterFunc", nilFunc},
		{"nil pointer", nilPtr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName(t)
			if err := Register(name, tc.s); !errors.Is(err, ErrNilSorter) {
				t.Fatalf("Register error = %v, want ErrNilSorter", err)
			}
			if _, ok := Lookup(name); ok {
				t.Error("nil sorter was registered")
			}
		})
	}
	// A non-nil pointer is fine.
	if err := Register(uniqueName(t), &ptrSorter{}); err != nil {
		t.Errorf("Register(&ptrSorter{}) = %v", err)
	}
}

func TestNamesSortedCopy(t *testing.T) {
	for _, n := range []string{"zz", "aa", "mm"} {
		if err := Register(uniqueName(t)+n, alwaysFatal); err != nil {
			t.Fatal(err)
		}
	}
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() not sorted: %v", names)
	}
	if !slices.Contains(names, DefaultName) {
		t.Errorf("Names() = %v, missing %q", names, DefaultName)
	}
	names[0] = "changed"
	if Names()[0] == "changed" {
		t.Error("Names() returned the registry's own slice")
	}
}

// TestRegistryConcurrent registers, looks up and lists from many goroutines
// at once; run with -race it checks the locking. It also checks that when
// several goroutines race to register one name exactly one wins.
func TestRegistryConcurrent(t *testing.T) {
	const workers = 16
	const perWorker = 50
	prefix := uniqueName(t)
	shared := uniqueName(t) + "-shared"

	var wg sync.WaitGroup
	var sharedWins atomic.Int32
	for w := 0; w < workers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				if err := Register(fmt.Sprintf("%s-%d-%d", prefix, w, i), alwaysFatal); err != nil {
					t.Errorf("Register: %v", err)
				}
			}
			switch err := Register(shared, alwaysFatal); {
			case err == nil:
				sharedWins.Add(1)
			case !errors.Is(err, ErrDuplicateName):
				t.Errorf("Register(shared): %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				if _, ok := Lookup(DefaultName); !ok {
					t.Error("default sorter vanished")
				}
				Lookup(fmt.Sprintf("%s-%d-%d", prefix, w, i))
				if i%10 == 0 {
					_ = Names()
				}
			}
		}()
	}
	wg.Wait()

	if n := sharedWins.Load(); n != 1 {
		t.Errorf("%d goroutines registered the shared name, want exactly 1", n)
	}
	for w := 0; w < workers; w++ {
		for i := 0; i < perWorker; i++ {
			if _, ok := Lookup(fmt.Sprintf("%s-%d-%d", prefix, w, i)); !ok {
				t.Fatalf("sorter %d-%d missing after concurrent registration", w, i)
			}
		}
	}
}
