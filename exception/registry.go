package exception

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// Errors returned by [Register]. They are wrapped with the offending name,
// so test for them with errors.Is.
var (
	// ErrEmptyName is returned when a sorter is registered under "".
	ErrEmptyName = errors.New("exception: sorter name is empty")
	// ErrNilSorter is returned when the sorter to register is nil,
	// including a typed nil such as a nil SorterFunc or a nil pointer.
	ErrNilSorter = errors.New("exception: sorter is nil")
	// ErrDuplicateName is returned when the name is already registered.
	// Registrations are permanent; there is no way to replace one.
	ErrDuplicateName = errors.New("exception: sorter name already registered")
)

var registry = struct {
	sync.RWMutex
	sorters map[string]Sorter
}{
	sorters: map[string]Sorter{DefaultName: Default, TiDBName: TiDB},
}

// Register makes s available under name, so that a data source name can
// select it with exceptionSorter=<name>. Names are matched exactly (they are
// case-sensitive and not trimmed). [Default] is registered under
// [DefaultName] before any user code runs.
//
// Register returns an error wrapping [ErrEmptyName] if name is empty,
// [ErrNilSorter] if s is nil, or [ErrDuplicateName] if name is already taken;
// in every error case the registry is left unchanged. It is safe to call
// from multiple goroutines.
func Register(name string, s Sorter) error {
	if name == "" {
		return ErrEmptyName
	}
	if isNil(s) {
		return fmt.Errorf("%w (name %q)", ErrNilSorter, name)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.sorters[name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicateName, name)
	}
	registry.sorters[name] = s
	return nil
}

// Lookup returns the sorter registered under name, matched exactly, and
// whether one was found. It is safe to call from multiple goroutines.
func Lookup(name string) (Sorter, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.sorters[name]
	return s, ok
}

// Names returns the registered names in ascending order, for example to
// list the valid choices in an error message about an unknown name. The
// returned slice is a fresh copy that the caller may modify.
func Names() []string {
	registry.RLock()
	names := make([]string, 0, len(registry.sorters))
	for name := range registry.sorters {
		names = append(names, name)
	}
	registry.RUnlock()
	sort.Strings(names)
	return names
}

// isNil reports whether s is nil or an interface holding a nil func,
// pointer, map, slice, channel or interface value.
func isNil(s Sorter) bool {
	if s == nil {
		return true
	}
	switch v := reflect.ValueOf(s); v.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}
