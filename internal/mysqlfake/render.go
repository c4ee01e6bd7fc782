package mysqlfake

// Render returns the bytes f puts on the wire in place of its phase's normal bytes, and the
// coarse phase they take the place of: PhaseAccept, PhaseGreeting, PhaseAuth, or PhaseCommand
// for anything answering a command (an OK answer for PhaseAnswer, a prepare answer for
// PhasePrepare, a "SELECT 1" result set with f's segment replaced for the result phases). The
// bytes are built as cfg's server would send them to its first connection; they seed the raw
// mode (AnswerNext, or a PhaseCommand fault with Raw).
func Render(f Fault, cfg Config) (Phase, []byte) {
	if cfg.Answer == nil {
		cfg.Answer = DefaultAnswer
	}
	c := &conn{srv: &Server{cfg: cfg}, n: 1, stmts: map[uint32]*stmt{}, caps: ClientDeprecateEOF}
	c.salt = make([]byte, 20)
	for i := range c.salt {
		c.salt[i] = 'A' + byte((7+i*13)%26)
	}
	apply := func(normal []byte) []byte {
		if f.Bytes == nil {
			return normal
		}
		return f.Bytes(append([]byte(nil), normal...))
	}
	var segs []segment
	switch f.Phase {
	case PhaseAccept:
		return PhaseAccept, apply(nil)
	case PhaseGreeting:
		return PhaseGreeting, apply(Packet(0, c.greeting()))
	case PhaseAuth:
		return PhaseAuth, apply(Packet(2, OKPayload()))
	case PhaseAnswer:
		segs = []segment{{PhaseAnswer, Packet(1, OKPayload())}}
	case PhasePrepare:
		segs = c.prepare("SELECT ?")
	default:
		segs = c.results(cfg.Answer("SELECT 1"), false)
	}
	var out []byte
	if f.Phase == PhaseCommand {
		for _, s := range segs {
			out = append(out, s.bytes...)
		}
		return PhaseCommand, apply(out)
	}
	for _, s := range segs {
		if s.phase == f.Phase {
			out = append(out, apply(s.bytes)...)
			if f.After != Continue {
				break
			}
			continue
		}
		out = append(out, s.bytes...)
	}
	return PhaseCommand, out
}
