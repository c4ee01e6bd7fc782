package wire

import (
	"strconv"
	"testing"
)

// BenchmarkGuard measures the guard's cost per answer: a one-row SELECT 1, and a result of
// 100 rows of 10 short columns.
func BenchmarkGuard(b *testing.B) {
	var hs []step = handshake(modern, 0)
	wide := []step{srv(1, []byte{10})}
	for i := range 10 {
		wide = append(wide, srv(byte(2+i), columnDef("c"+strconv.Itoa(i))))
	}
	for r := range 100 {
		var row []byte
		for c := range 10 {
			row = append(row, lstr(strconv.Itoa(r*c))...)
		}
		wide = append(wide, srv(byte(12+r), row))
	}
	wide = append(wide, srv(112, []byte{0xfe, 0, 0, 0, 0, 0, 0}))
	for _, bc := range []struct {
		name   string
		answer []step
	}{
		{"select1", textResult(modern, "1", 0)},
		{"100x10", wide},
	} {
		var cmd, answer []byte
		cmd = query("SELECT").b
		for _, s := range bc.answer {
			answer = append(answer, s.b...)
		}
		b.Run(bc.name, func(b *testing.B) {
			var g Guard
			g.Init(Limits{})
			for _, s := range hs {
				if s.client {
					g.Client(s.b)
				} else {
					g.Server(s.b)
				}
			}
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for b.Loop() {
				g.Client(cmd)
				if err := g.Server(answer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
