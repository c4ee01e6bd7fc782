package nodes

import "github.com/lbd-go/lbd/internal/clock"

// Clock tells the time and makes timers for a source's loops (polls, refreshes, retries); tests
// inject one to control time. It is the same type as lbd.Clock: the Connector hands its own
// clock to the sources it builds (SourceConfig.Clock). Implementations must be safe for
// concurrent use.
type Clock = clock.Clock

// Timer is the timer a Clock makes; it is the same type as lbd.Timer.
type Timer = clock.Timer

// RealClock is the wall clock: what a source uses when its configuration carries no Clock.
var RealClock Clock = clock.Real
