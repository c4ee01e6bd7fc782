package statementmode

import (
	"strings"

	"github.com/lbd-go/lbd/lbdtest"
)

// proxiesThatSawText counts the proxies whose recent statements contain text.
func proxiesThatSawText(cl *lbdtest.Cluster, text string) int {
	n := 0
	for _, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			if strings.Contains(q, text) {
				n++
				break
			}
		}
	}
	return n
}
