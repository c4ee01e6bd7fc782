package exception

import (
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/errtree"
)

// Matching on message text is fragile (wording changes between versions and
// messages can echo user data), so the default rules avoid it everywhere
// except here: OBProxy and similar proxies report "I have no usable backend"
// with a generic error number, or none at all, and the text is the only
// signal. These phrases are matched whatever number accompanies them, as the
// Java lb-driver does; a server message that merely quotes one of them
// (say, a duplicate-entry error on that very string) would retire one
// healthy connection, a cost accepted for catching a dead backend.
// Matching is case-insensitive.
var proxyMessages = []string{
	"NO ALIVE DATASOURCE",         // OBProxy: every backend it could route to is marked dead.
	"NO DATASOURCE",               // OBProxy: no backend configured or reachable for this session.
	"COULD NOT CREATE CONNECTION", // OBProxy: opening the backend connection for this session failed.
}

// linkFailureMessage is the generic "the link is down" text of Java-based
// tooling and some proxies. It is only trusted when no error number
// accompanies it, since a numbered error already says what happened.
const linkFailureMessage = "COMMUNICATIONS LINK FAILURE"

// messageReason returns the reason of the first text rule matching err, or
// "" if none does.
//
// Only leaf errors (those wrapping nothing) are inspected: for a
// *mysql.MySQLError its Message field, for anything else its Error() text.
// Context added by wrappers on the way up, such as
// fmt.Errorf("lbd: no datasource matches %q: %w", ...), is never matched.
func messageReason(err error) string {
	var reason string
	errtree.Walk(err, func(e error) bool {
		if !errtree.IsLeaf(e) {
			return false
		}
		text, numbered := leafText(e)
		upper := strings.ToUpper(text)
		for _, m := range proxyMessages {
			if strings.Contains(upper, m) {
				reason = ReasonProxyMessage
				return true
			}
		}
		if !numbered && strings.Contains(upper, linkFailureMessage) {
			reason = ReasonLinkFailure
			return true
		}
		return false
	})
	return reason
}

// leafText returns the text of a leaf error and whether it carries a
// non-zero MySQL error number.
func leafText(err error) (text string, numbered bool) {
	if me, ok := err.(*mysql.MySQLError); ok {
		if me == nil {
			return "", false
		}
		return me.Message, me.Number != 0
	}
	return err.Error(), false
}
