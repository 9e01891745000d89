package proxy

// settle runs Options.Settled the first time a relayed request has its
// answer (or its error): the gate's start-up burst, from its start to the
// first answer from a child it started for it, is over. The stdio command
// gives the runtime one P from then on (cmd/mcp-gate/procs.go says why
// not sooner). After the first time it costs one atomic load.
func (g *Gate) settle() {
	if g.opts.Settled != nil {
		g.settled.Do(g.opts.Settled)
	}
}
