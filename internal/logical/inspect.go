package logical

// PreparedQueries returns the open prepared queries and how many logical statements hold each,
// for the cluster suites (internal/inspect).
func (m *Mode) PreparedQueries() map[string]int {
	s := &m.prepared
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.open))
	for q, pq := range s.open {
		out[q] = pq.refs
	}
	return out
}

// Pinned reports whether dc, a logical connection, keeps its physical connection; ok is false
// when dc is not a logical connection.
func Pinned(dc any) (pinned, ok bool) {
	l, ok := dc.(*logicalConn)
	if !ok {
		return false, false
	}
	return l.pinned(), true
}
